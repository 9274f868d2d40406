"""Credentials written in prose: "my laptop password is …", "PIN: 4821", "密码是 …".

A password said in a sentence has no ``key=value`` shape for :mod:`memgit.secrets.rules` to
find, so it needs its own reading, in each language the Gate reads (English, Spanish, German,
Chinese). A regex finds a credential word (``password``, ``PIN``, ``wifi key``,
``contraseña``, ``Passwort``, ``密码`` …), an optional complement (``for the router``,
``del portátil``, ``für das WLAN``) and a copula (``is``, ``:``, ``es``, ``ist``, ``lautet``,
``是``); then :func:`_strength` and the clause around it decide whether the word after it
is a value or prose:

* a quoted value (``"correct horse battery staple"``) is a value;
* a value is one token: a digit or a symbol in it (``hunter2``, ``Tr0ub4dor&3``) makes it one
  wherever it stands; a token of letters only (``sunshine``) is one only where the clause
  ends after it (end of text, punctuation, ``and``/``y``/``und``), so "the password is
  expired now" stays prose;
* words of ordinary prose (``in``, ``the``, ``wrong``, ``stored``, ``abgelaufen``), places a
  password is kept (``1Password``, ``Bitwarden``, ``the vault``), placeholders (``<pw>``,
  ``$DB_PASSWORD``, ``****``) and descriptions (``8-characters``) are never values;
* a PIN is 4 to 12 digits;
* a login given as ``user / password`` (``login is admin / …``, ``credentials: root/…``)
  loses the part after the separator.

The scan runs over the lower-cased view :mod:`memgit.secrets.redact` reads; each match
starts at a literal credential word and reads a bounded stretch after it, so the cost stays
linear in the text. The same tables serve the Gate's credential fence
(:func:`memgit.secrets.redact.find_credentials`).
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Iterator

from memgit.lazyre import lazy

__all__ = [
    "CREDENTIAL_WORD",
    "FUNCTION_WORDS",
    "PLACES",
    "PROSE_KINDS",
    "iter_prose_credentials",
    "iter_random_beside_credential",
    "iter_shaped_credentials",
    "looks_generated",
    "looks_random",
]

PASSWORD_KIND = "password-prose"
PIN_KIND = "pin-prose"
WIFI_KIND = "wifi-key-prose"
PROSE_KINDS: tuple[str, ...] = (PASSWORD_KIND, PIN_KIND, WIFI_KIND)

# Letters of the four languages' words; a credential word must not be the end of a longer one
# (``spin is``), except German compounds such as ``Routerpasswort`` and Chinese, which has
# no spaces.
_LETTER = "a-z0-9_\u00c0-\u024f"


def _word(literal: str) -> str:
    """``literal`` where it is not the end of a longer word."""
    return f"{literal}(?<![{_LETTER}]{literal})"


# Each word starts with a literal character, so that :mod:`re` searches the text for the
# words' first characters instead of trying the whole pattern at every offset.
_PASSWORD_WORDS = (
    *(_word(word) for word in ("password", "passwd", "passcode", "passphrase", "pw", "pwd")),
    "passwort",
    "kennwort",
    *(_word(word) for word in ("contraseña", "contrasena")),
    _word("clave") + "[ \t]+de[ \t]+acceso",
    # A pre-shared key (a VPN's, a wifi's).
    _word("psk"),
    "pre-?shared[ \t]+key",
    "密码",
    "密碼",
    "口令",
    # A passphrase by another name.
    *(_word(word) + "[ \t]+phrase" for word in ("recovery", "seed")),
    "密码短语",
    "助记词",
)
_PIN_WORDS = (
    _word("pin") + "(?:[ \t-]?(?:code|number|nummer|码|碼))?",
    *(_word(word) + "[ \t]+pin" for word in ("código", "codigo")),
    "geheimzahl",
)
_WIFI_WORDS = (
    *(
        _word(word) + "[ \t-]?(?:key|schl(?:ü|ue)ssel)"
        for word in ("wifi", "wi-fi", "wlan", "wireless", "network", "netzwerk", "wpa", "wpa2")
    ),
    _word("clave") + "[ \t]+(?:(?:del?|de[ \t]+la)[ \t]+)?(?:wi-?fi|red|router|wlan)",
)
# "for the router", "del portátil", "für das WLAN": up to four short words. Runs of blanks
# are matched possessively, so a long one is crossed once, not once per way to split it.
_COMPLEMENT = (
    r"(?:[ \t]++(?:for|to|of|on|at|in|de|del|en|para|für|fuer|fürs|fuers|zum|zur|vom|von|des|im|am"
    r"|bei|beim"
    r"|meiner|meines|deiner|deines|unserer|unseres|der)"
    r"""(?:[ \t]++[^\s:=,;.!?"'`()<>\[\]{}]{1,30}){1,4}?)?"""
)
_VERB_END = rf"(?![{_LETTER}])"
_COPULA = (
    r"[ \t]*+(?:[:=](?![=:])|(?:"
    rf"(?:(?<=[ \t])(?:is|was|are|es|era|ist|war|lautet|heißt|heisst){_VERB_END}"
    rf"|['\u2019]s{_VERB_END})"
    r"(?:[ \t]++(?:now|still|currently|actually|just|literally|simply|ahora|todavía|jetzt|nun|noch"
    rf"|immer[ \t]+noch){_VERB_END})?"
    rf"(?:[ \t]++(?:set|changed|updated)[ \t]++to{_VERB_END})?"
    rf"|(?<=[ \t])(?:has[ \t]++been[ \t]++)?(?:set|changed|updated|reset)[ \t]++to{_VERB_END}"
    r"|就是|是|为|為|(?:改成|改为|改為|设为|设置为|設為|设置成|设成|换成)了?"
    r")[ \t]*+:?)[ \t]*+"
)
# Quotes a value may stand in, each with its closing quote (curly ones as escapes).
_CLOSING = {
    '"': '"',
    "'": "'",
    "`": "`",
    "\u201c": "\u201d",
    "\u2018": "\u2019",
    "«": "»",
    "「": "」",
    "『": "』",
}
_OPENING = "".join(_CLOSING)
_QUOTES = "".join(dict.fromkeys([*_CLOSING, *_CLOSING.values()]))
# CJK scripts and their punctuation end a value: "密码是abc123，记住" holds ``abc123``.
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef"
_TOKEN = rf"[^\s,;()<>\[\]{{}}\\{_QUOTES}{_CJK}]{{1,128}}+"
_VALUE = (
    rf"(?:(?P<open>[{_OPENING}])(?P<quoted>[^\n\\\[\]]{{1,128}}?)[{''.join(_CLOSING.values())}]"
    rf"|(?P<token>{_TOKEN}))"
)


# One scan for the three kinds. It has no named group before the credential word, so that
# :mod:`re` keeps its fast search for the words' first characters; the kind is read from
# the word afterwards.
_SCAN = lazy(
    f"(?:{'|'.join((*_PASSWORD_WORDS, *_PIN_WORDS, *_WIFI_WORDS))}){_COMPLEMENT}{_COPULA}{_VALUE}"
)
# A login given as ``user / password`` or ``user:password``: the part after the separator.
_LOGIN_WORDS = (
    *(_word(word) for word in ("login", "credentials", "creds", "zugangsdaten", "credenciales")),
    "登录",
    "账号",
)
_PAIR = lazy(
    f"(?:{'|'.join(_LOGIN_WORDS)}){_COMPLEMENT}{_COPULA}"
    rf"(?P<user>[^\s/:,;\[\]]{{1,64}})[ \t]*+[/:][ \t]*+(?P<token>{_TOKEN})"
)
# The same with no verb ("login tidepool / …"): the part after the separator must then
# have a password's shape.
_LOGIN_PAIR = lazy(
    f"(?:{'|'.join(_LOGIN_WORDS)})[ \t]++"
    rf"[^\s/:,;]{{1,64}}[ \t]*+/[ \t]*+(?P<token>{_TOKEN})"
)
# A password set in the same sentence that names it: "set the staging admin password to
# …", "change my wifi password to …"; the value must have a password's shape.
_SET_TO = lazy(
    r"(?:set|change|changed|reset|update|updated)[ \t]++(?:(?:the|my|our|your|its)[ \t]++)?"
    r"(?:[^\s:,;.!?]{1,30}[ \t]++){0,3}?"
    f"(?:{'|'.join(_PASSWORD_WORDS)})[ \t]++to[ \t]++(?P<token>{_TOKEN})"
)
_PIN_STARTS = ("pin", "código", "codigo", "geheimzahl")
_WIFI_STARTS = ("wifi", "wi-fi", "wlan", "wireless", "network", "netzwerk", "wpa")
_WIFI_CLAVE = lazy(_WIFI_WORDS[-1])

# Words of ordinary prose in the four languages: articles, prepositions, pronouns, adverbs,
# and what one does with a password (see, ask, stored). A passphrase of several words
# holds none of them ("Password: see the vault" is prose).
FUNCTION_WORDS = frozenset(
    """
    the a an in at on of for from to with by into under inside as is are was were be been it its
    this that these those there here what which who where when how my your our his her their
    mine yours ours not no none null nil n/a also still just now only too very really quite
    always never please tbd todo currently actually ahora todavía nun somewhere elsewhere
    usually probably basically literally simply definitely obviously normally typically
    something nothing anything whatever same
    stored saved kept written listed located found available shared sent attached below above
    see ask check look find use get via
    el la los las un una unos unas en de del al para por con sin mi mis tu tus su sus nuestro
    nuestra es está esta este eso esto lo que ni muy también aquí allí guardada guardado mismo
    misma pregunta pide mira busca usa ver
    der die das den dem des ein eine einen einem im am an auf aus bei mit von vom zu zum zur
    für mein meine meinen dein deine sein seine unser unsere ist sind war nicht kein keine auch
    noch schon jetzt hier dort sehr siehe steht liegt frag frage schau dasselbe derselbe
    """.split()
)
# What is said *about* a password, which a single word after "is" usually is.
_VERDICT_WORDS = frozenset(
    """
    empty blank different set unset changed reset required needed optional mandatory wrong
    right correct incorrect invalid valid expired weak strong secure insecure long short simple
    easy hard complex complicated unknown forgotten lost new old fine good bad broken locked
    hidden secret private personal temporary default random generated encrypted hashed redacted
    missing pending ready sensitive case-sensitive unchanged identical accepted rejected denied
    rotated revoked compromised leaked updated protected managed handled included enclosed
    provided printed taped pinned separate obvious common known public unique reused trivial
    guessable same-as stale outdated current fresh
    incorrecta incorrecto correcta correcto segura seguro nueva nuevo vieja viejo larga largo
    corta corto secreta secreto obligatoria obligatorio válida válido inválida inválido caducada
    caducado vacía vacío diferente olvidada olvidado perdida perdido cambiada cambiado igual
    falsch richtig korrekt abgelaufen geändert leer neu alt lang kurz geheim unbekannt
    vergessen gespeichert sicher unsicher gleich gültig ungültig hinterlegt pflicht
    erforderlich notwendig
    """.split()
)
# Type names: ``password: string;`` is a declaration in code.
_TYPES = frozenset(
    """
    string str bytes text number int integer bool boolean char varchar any object undefined
    secretstr securestring
    """.split()
)
# Where a password is kept: naming the place is not giving the password.
PLACES = frozenset(
    """
    1password bitwarden vaultwarden lastpass keepass keepassxc keepassx dashlane keychain
    vault tresor bóveda boveda gestor manager passwort-manager password-manager safe wiki
    notion confluence sops doppler infisical .env env
    """.split()
)
# Endings of participles and adjectives ("rotated", "guessable", "caducada"): a word of
# letters only that ends so describes a password rather than being one.
_DESCRIBING = ("ed", "able", "ible", "ous", "ive", "ful", "less", "ado", "ada", "ido", "ida")
_NOT_VALUES = FUNCTION_WORDS | _VERDICT_WORDS | _TYPES | PLACES
_CONTINUATIONS = frozenset(
    "and but or so then y e o pero und aber oder ok okay thanks thx please btw lol".split()
)
_TRAILING = ".,:;!?…"
_DESCRIPTION = lazy(
    r"[0-9]+[+-]?(?:digits?|chars?|characters?|letters?|stellig\w*|zeichen|d[íi]gitos|caracteres|位)"
)
_PLACEHOLDER = lazy(r"[$<{%]|[*x.…•#_-]+$")
_PIN = lazy(r"[0-9]{4,12}")
_PATH = lazy(r"[~.]{0,2}/")  # ``pwd is /home/dana`` names a folder
# A hyphen, apostrophe or dot between letters joins words (``case-sensitive``,
# ``z.string``): no symbol that makes a value of a word.
_INNER_JOIN = lazy(r"(?<=[^\W\d_])[-'\u2019.](?=[^\W\d_])")
_NEXT_WORD = lazy(r"[^\s.,;:!?]{1,16}")


def iter_prose_credentials(view: str, folded: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, kind)`` of each credential value written in prose. ``folded`` is
    ``view`` lower-cased with the same offsets; the value is judged on ``view``."""
    found: set[int] = set()
    for match in _SCAN.finditer(folded):
        kind = _kind(folded, match.start())
        span = _value_span(view, match, kind)
        if span is not None:
            found.add(span[0])
            yield span[0], span[1], kind
            follow = _AND_ONE.match(folded, span[1])
            if follow is not None:
                start, token = _token(view, follow)
                if _shaped_password(token):
                    yield start, start + len(token), PIN_KIND if _PIN.fullmatch(token) else kind
    for match in _PAIR.finditer(folded):
        if _HOST.fullmatch(match.group("user")):  # "creds: db1.internal / 5432 / …"
            continue
        span = _token_span(view, match)
        if span is not None:
            yield span[0], span[1], PASSWORD_KIND
    yield from iter_shaped_credentials(view, folded, found)


# A second value for a second thing, its credential word left out: "la contraseña del
# portátil es … y la del móvil …", "… and the one for the bank: …".
_AND_ONE = lazy(
    r"[ \t]*+,?[ \t]*+(?:y|and|und|e)[ \t]++(?:(?:la|el|lo|the|die|der|das|den)[ \t]++)?"
    r"(?:one[ \t]++)?(?:del?|for|für|fuer|of|vom|von)[ \t]++(?:[^\s\d:,;.!?]{1,20}[ \t]++){1,3}?"
    rf"(?:(?:es|is|ist|lautet)[ \t]++|:[ \t]*+)?(?P<token>{_TOKEN})"
)


def _token(view: str, match: re.Match[str], group: str = "token") -> tuple[int, str]:
    """Where ``group`` starts, and its text in ``view`` less trailing punctuation."""
    start, raw_end = match.span(group)
    return start, view[start:raw_end].rstrip(_TRAILING)


def _kind(folded: str, start: int) -> str:
    """The kind of the credential word at ``start``."""
    if folded.startswith(_PIN_STARTS, start):
        return PIN_KIND
    if folded.startswith(_WIFI_STARTS, start) or _WIFI_CLAVE.match(folded, start):
        return WIFI_KIND
    return PASSWORD_KIND


def _value_span(view: str, match: re.Match[str], kind: str) -> tuple[int, int] | None:
    if match.group("open") is not None:
        start, end = match.span("quoted")
        quoted = view[start:end]
        if view[end] != _CLOSING[match.group("open")] or not _quoted_value(quoted):
            return None
        return (start, end) if kind != PIN_KIND or _PIN.fullmatch(quoted) else None
    if kind == PIN_KIND:
        start, token = _token(view, match)
        return (start, start + len(token)) if _PIN.fullmatch(token) else None
    return _token_span(view, match)


def _token_span(view: str, match: re.Match[str]) -> tuple[int, int] | None:
    """The span of the ``token`` group if it is a value (see :func:`_strength`)."""
    start, raw_end = match.span("token")
    if _is_call(view, raw_end):
        return None
    token = view[start:raw_end].rstrip(_TRAILING)
    end = start + len(token)
    strength = _strength(token)
    if strength is None:
        # "correct horse battery staple": a word that describes a password may start a
        # passphrase of four words or more.
        lower = token.lower()
        if end < raw_end or lower not in _VERDICT_WORDS or lower in FUNCTION_WORDS:
            return None
        phrase_end = _passphrase_end(view, end, least=3)
        return None if phrase_end is None else (start, phrase_end)
    if strength == _STRONG or end < raw_end or _clause_ends(view, end):
        return start, end
    phrase_end = _passphrase_end(view, end)
    return None if phrase_end is None else (start, phrase_end)


# One more word of a passphrase: letters (a hyphen or apostrophe may join them), up to a blank
# or punctuation.
_PHRASE_WORD = lazy(r"""[ \t]++([^\W\d_][^\s.,;:!?()<>\[\]{}"'`]{0,30})""")
_PHRASE_WORDS = 5


def _passphrase_end(view: str, end: int, least: int = 1) -> int | None:
    """Where a passphrase of dictionary words that starts with the word ending at ``end``
    ends: up to five more words, none of prose or describing a password, and the clause over
    after the last ("my horse battery staple"), at least ``least`` of them. None if it is prose."""
    at = end
    for count in range(1, _PHRASE_WORDS + 1):
        word = _PHRASE_WORD.match(view, at)
        if word is None or not _phrase_word(word.group(1)):
            return None
        at = word.end()
        if count >= least and _clause_ends(view, at):
            return at
    return None


def _phrase_word(word: str) -> bool:
    """A word a passphrase may go on with: letters, two or more, none of prose."""
    lower = word.lower()
    if len(word) < 2 or lower in _NOT_VALUES or lower in _CONTINUATIONS:
        return False
    core = _INNER_JOIN.sub("", word)
    return core.isalpha() and not lower.endswith(_DESCRIBING)


def _quoted_value(text: str) -> bool:
    return len(text.strip()) >= 4 and not text[0].isspace() and not _PLACEHOLDER.match(text)


_STRONG, _WEAK = "strong", "weak"


def _strength(token: str) -> str | None:
    """``strong`` for a token that is a value wherever it stands (a digit or symbol in it,
    or mixed case inside a word), ``weak`` for one that is a value only at a clause end
    (letters only), None for one that is never a value."""
    word = token.lower()
    if len(token) < 4 or word in _NOT_VALUES:
        return None
    if _PLACEHOLDER.match(word) or _DESCRIPTION.fullmatch(word) or _PATH.match(word):
        return None
    core = _INNER_JOIN.sub("", token)
    if not core.isalpha():
        return _STRONG
    if core[1:] != core[1:].lower() and core != core.upper():
        return _STRONG
    return None if word.endswith(_DESCRIBING) else _WEAK


def _clause_ends(view: str, end: int) -> bool:
    """Whether the clause is over at ``end``: the text ends, a line or a CJK character or
    punctuation follows, or a word that joins clauses (``and``, ``y``, ``und``)."""
    if _is_call(view, end):  # ``password: z.string()``
        return False
    at = end
    while at < len(view) and view[at] in " \t":
        at += 1
    if at >= len(view):
        return True
    char = view[at]
    if char == "[":  # a placeholder an earlier pass left, or a remark: the clause goes on
        return False
    if char == "\\":  # an escape in JSON or code: only a line break ends the clause
        return view[at + 1 : at + 2] in ("n", "r")
    if not ((char.isalnum() and char.isascii()) or (char.isalpha() and not _is_cjk(char))):
        return True
    following = _NEXT_WORD.match(view, at)
    return following is not None and following.group().lower() in _CONTINUATIONS


def _is_call(view: str, end: int) -> bool:
    """Whether a ``(`` follows at ``end``: a call in code (``pw = self.find_password(realm)``)."""
    return view[end : end + 1] == "("


def _is_cjk(char: str) -> bool:
    return "\u3000" <= char <= "\u9fff" or "\uac00" <= char <= "\ud7af" or char >= "\uff00"


# --- The second test: a credential-shaped value after a cue --------------------------------
#
# People also write a credential with no verb before it ("PIN 0000 for the card", "door code
# 4512#", "pw sunny-dog-77"), after a dash or in parentheses, as the answer to their own
# question ("the wifi password? it's hunter22"), value first ("use hunter2 to log in"), or in
# a list under a heading ("passwords: gmail …, github …"). Without a verb to say a value
# follows, the value itself must look like a credential: digits and a letter or a symbol for a
# password (``sunny-dog-77``, ``Tr0ub4dor&3``), a run of digits for a PIN or a code (``4512#``,
# ``66-12-90``), eight or more letters and digits for a key. A word of letters only is never
# one here, so "use pnpm to install" and "log in with SSO" stay prose.

_LOOSE_PASSWORD_WORDS = (
    *_PASSWORD_WORDS,
    *(_word(word) for word in ("passwort", "kennwort")),
    # "pass" only as a key ("pass: …"), after a user name ("user deploy / pass …") or as
    # an item of a list ("usuario lector, pass …").
    "(?<=/)pass(?=[ \t]*+[^ \ta-z0-9_])|(?<=/[ \t])pass(?![a-z0-9_])|"
    + "(?<=[,;][ \t])pass(?![a-z0-9_])|"
    + _word("pass")
    + "(?=[ \t]*+[:=])",
    # Redis' AUTH string.
    _word("auth") + "[ \t]++(?:string|password|pass)",
    _word("clave"),
    _word("combination"),
)
_CODE_WORDS = (
    # Before the bare word, which would otherwise take "de" for the value.
    "c(?:ó|o)digo[ \t]++(?:de[ \t]++(?:la[ \t]++)?|del[ \t]++)(?:acceso|puerta|portal|alarma"
    "|seguridad|verificaci(?:ó|o)n|entrada|garaje|caja)",
    _word("code"),
    *(_word(word) for word in ("código", "codigo")),
    *(
        f"{stem}code"
        for stem in """zugangs tür tuer tor alarm sicherheits bestätigungs bestaetigungs
        verifizierungs einmal tresor""".split()
    ),
    "验证码",
    "驗證碼",
    "动态码",
    "校验码",
    "门禁码",
    "安全码",
    "激活码",
)
_KEY_WORDS = (
    *(
        _word(word) + r"[ \t_-]?(?:key|schl(?:ü|ue)ssel)"
        for word in ("api", "app", "license", "licence", "product", "secret", "access", "recovery")
    ),
    _word("apikey"),
    _word("appkey"),
    _word("appsecret"),
    _word("token"),
    _word("secret"),
    "lizenzschl(?:ü|ue)ssel",
    _word("clave") + r"[ \t]+de[ \t]+(?:la[ \t]+)?(?:api|licencia)",
    "密钥",
    "秘钥",
    "令牌",
)
# Between the cue and the value: a blank, a dash, a parenthesis (``PIN 0000``, ``password - …``,
# , ``contraseña (…)``), or the cue asked as a question and answered ("the wifi password?
# it's …", "¿la contraseña? es …", "das Passwort? Es ist …").
# A complement comes only before a verb or an answer: after "password for user" a blank
# leads to the user's name, not to the password.
_ANSWER = (
    r"[ \t]*+[?,\u00bf][ \t]*+(?:it['\u2019]s|it[ \t]++is|that['\u2019]s|es[ \t]++ist|es"
    r"|ist|就是|是)(?![a-z0-9_])[ \t]*+"
)
_BARE_GAP = r"(?:[ \t]*+[-\u2013\u2014(\uff08][ \t]*+|[ \t]++)"
_LOOSE = lazy(
    "(?:"
    + "|".join((*_LOOSE_PASSWORD_WORDS, *_PIN_WORDS, *_WIFI_WORDS, *_CODE_WORDS, *_KEY_WORDS))
    + ")"
    f"(?:{_COMPLEMENT}(?:{_COPULA}|{_ANSWER})|{_BARE_GAP})(?P<token>{_TOKEN})"
)
_LOOSE_PIN = lazy("|".join(_PIN_WORDS))
_LOOSE_CODE = lazy("|".join((_word("combination"), *_CODE_WORDS)))
_LOOSE_KEY = lazy("|".join(_KEY_WORDS))
# Numbers that name something else: "error code 4040", "código postal 28001".
_NOT_SECRET_CODES = frozenset(
    """
    error status exit return http response zip postal post area country source tracking order
    reference product item promo discount coupon iso colour color hex unicode ascii char
    character line bar qr dial phone fehler quell fuente estado salida país pais octal key
    duplicated
    """.split()
)
_WORDS = lazy(r"[^\W_]+(?:-[^\W_]+)*")
_ACCESS_WORDS = frozenset(
    """
    door gate entry access alarm garage keypad lockbox lock safe backup recovery verification
    security 2fa otp sms one-time login wifi unlock
    """.split()
)
# Value first: "use hunter2 to log in", "usa … para entrar", "mit … einloggen", "用 … 登录".
_LOGIN_PURPOSE = (
    r"(?:to[ \t]++(?:log|sign)[ \t-]?(?:in|on)|to[ \t]++(?:unlock|get[ \t]++in|disarm)"
    r"|at[ \t]++the[ \t]++(?:(?:front|back|side|main)[ \t]++)?(?:door|gate|keypad)"
    r"|as[ \t]++(?:(?:the|my|a|our|your)[ \t]++)?(?:password|passcode|passphrase|pin|pw)"
    r"|para[ \t]++(?:entrar|acceder|iniciar[ \t]++sesi(?:ó|o)n|desbloquear|abrir)"
    r"|como[ \t]++(?:(?:la|el|tu|mi)[ \t]++)?(?:contraseña|contrasena|pin"
    r"|clave(?![ \t]++[a-zñ]))"  # "como clave primaria" is a primary key
    r"|zum[ \t]++(?:einloggen|anmelden|entsperren)|als[ \t]++(?:passwort|kennwort|pin)"
    r"|einloggen|anmelden|entsperren)(?![a-z0-9_])"
)
_VALUE_FIRST = lazy(
    "(?:"
    + "|".join(
        _word(verb)
        for verb in """use enter type try set put usa usar pon introduce escribe teclea nimm
        benutze verwende mit""".split()
    )
    + rf")[ \t]++(?P<token>{_TOKEN})[ \t]++{_LOGIN_PURPOSE}"
    "|(?:"
    + "|".join(
        (
            _word("log") + r"(?:ged)?[ \t-]?(?:in|on)(?:to)?",
            _word("sign") + r"(?:ed)?[ \t-]?(?:in|on)(?:to)?",
            _word("ssh") + r"(?:[ \t]++in(?:to)?)?",
            _word("unlock") + r"(?:[ \t]++(?:it|this|that|the[ \t]++[a-z]{1,20}))?",
            *(_word(verb) for verb in ("entra", "entrar", "accede", "acceder", "conéctate")),
            "inicia[ \t]++sesi(?:ó|o)n",
        )
    )
    + r")(?:[ \t]++as[ \t]++[^\s]{1,32})?[ \t]++(?:with|using|con)[ \t]++"
    rf"(?P<token2>{_TOKEN})"
    + r"|(?:"
    + "|".join(_word(verb) for verb in ("log", "logg", "logge", "melde", "meld"))
    + rf")[ \t]++(?:dich|mich|sich|euch)[ \t]++mit[ \t]++(?P<token3>{_TOKEN})"
    + rf"|(?:用|输入|使用)[ \t]*+(?P<token4>[^\s{_CJK}]{{1,128}}+)"
    + r"[ \t]*+(?:登录|登陆|登入|解锁|开门|进入)"
)
# A bare "key" after a wifi or a door named on the same line: "guest wifi is Atelier-Guest,
# key …", "WLAN im Büro heißt …, der Schlüssel ist …". Elsewhere a key is a database's or a
# keyboard's.
_BARE_KEY = lazy(
    f"(?:{_word('key')}|schl(?:ü|ue)ssel(?<![{_LETTER}]schlüssel)(?<![{_LETTER}]schluessel))"
    f"(?:{_COPULA}|{_BARE_GAP})(?P<token>{_TOKEN})"
)
_KEY_PLACE = lazy(
    r"wi-?fi|wlan|ssid|network|netzwerk|router|hotspot|door|tür|tuer|lock|schloss|safe|tresor"
)
_KEY_CONTEXT = 80
# Each value-first form holds one of these (a purpose, a login verb): a text with none is
# not scanned for them, which spares most turns the scan's cost.
_PURPOSE_WORDS = (
    *("log", "sign", "unlock", "get", "disarm", "door", "gate", "keypad", "pass", "pin", "pw"),
    *("ssh", "entra", "accede", "inicia", "desbloque", "abrir", "contrase", "clave", "conéctate"),
    *("einlogg", "anmeld", "entsperr", "kennwort", "meld", "登", "解锁", "开门", "进入"),
)


def _has_purpose(folded: str) -> bool:
    return any(word in folded for word in _PURPOSE_WORDS)


# A user and a password with no cue: ``admin / …``, ``root/…``.
_ADMIN_PAIR = lazy(
    "(?:"
    + "|".join(
        f"{name}(?<![{_LETTER}/.]{name})"
        for name in ("admin", "root", "administrator", "guest", "postgres")
    )
    + rf")[ \t]*+/[ \t]*+(?P<token>{_TOKEN})"
)
# A heading over a list of credentials: "passwords: gmail …, github …", "logins: …".
_HEADING = lazy(
    "(?:"
    + "|".join(
        (
            *(
                _word(word)
                for word in """passwords logins credentials creds credenciales contraseñas
                contrasenas zugangsdaten""".split()
            ),
            "passw(?:ö|oe)rter",
            "kennw(?:ö|oe)rter",
            "账号密码",
            "登录信息",
        )
    )
    + r")(?<![-#/.]credentials)(?![a-z0-9_-])[^\n:：=\[\]"
    + f"{_QUOTES}]{{0,40}}+"
    + r"[:：](?P<rest>[^\n]{1,200}+)"
)
_LIST_TOKEN = lazy(rf"[^\s,;()<>\[\]{{}}\\{_QUOTES}{_CJK}]{{1,128}}+")
# A Chinese passphrase after a colon: "口令：天王盖地虎". Not one where the words say where it
# is or ask for it ("密码：见保险箱", "密码：多少？").
_CJK_PHRASE = lazy(
    r"(?:密码|密碼|口令|暗号)[ \t]*+[:：][ \t]*+"
    r"(?P<phrase>[\u3400-\u9fff]{2,16}+)(?![\u3400-\u9fff])"
    r"(?=[ \t]*+(?:$|[\n。，！；、,.!;]))"
)
_CJK_NOT_PHRASE = frozenset("见在请问查看参无空略同忘未已不没要需必至多什怎哪由存放保去找")
_DIGITS = lazy(r"(?:[0-9]{4,12}|[0-9]{2,6}(?:-[0-9]{2,6}){1,3})[#*]?")
_EMAIL = lazy(r"[^@\s]+@[^@\s]+\.[a-z]{2,}", re.IGNORECASE)
_VERSION = lazy(r"v?[0-9]+(?:\.[0-9]+)+[a-z0-9.+-]*", re.IGNORECASE)
_MEASURE = lazy(
    r"[0-9]+(?:ms|s|px|kb|mb|gb|tb|min|h|am|pm|st|nd|rd|th|k|m|x|gbps|mbps|hz|mhz|ghz)",
    re.IGNORECASE,
)
_NOT_STARTS = ("-", "_", "$", "<", "{", "%", "/", "~/", "./", "[", "#", "@", "http")
# Symbols that mark a password where no digit does (``Tr0mb0ne!`` has both, ``Otter$Creek``
# one); a hyphen, dot, slash or underscore also joins words and names (``and/or``, ``O_APPEND``).
_MARKS = frozenset("!#$%&*+?@^~|")
_MARKED = lazy("[0-9!#$%&*+?@^~|]")
_RADIX = lazy(r"0[xob][0-9a-f]", re.IGNORECASE)  # 0x1F, 0o666: numbers in code


def _shaped_password(token: str) -> bool:
    """A password by its shape alone: a letter and a digit or symbol (``sunny-dog-77``,
    ``Kx9!mera``), or a run of 4 to 12 digits; never a flag, a path, an address, a version,
    a measure or a placeholder."""
    if len(token) < 4 or _MARKED.search(token) is None:
        return False
    if token.lower() in _NOT_VALUES or token.lower().startswith(_NOT_STARTS):
        return False
    if "=" in token or _EMAIL.fullmatch(token) or _VERSION.fullmatch(token):
        return False
    if _HOST.fullmatch(token.lower()):  # ``mongo1.dc2.internal``
        return False
    if _MEASURE.fullmatch(token) or _DESCRIPTION.fullmatch(token.lower()):
        return False
    if _DIGITS.fullmatch(token):
        return True
    if "/" in token or _RADIX.match(token):
        return False
    has_letter = any(char.isalpha() for char in token)
    marked = any(char.isdigit() or char in _MARKS for char in token)
    return len(token) >= 5 and has_letter and marked


def _shaped_code(token: str, *, letters: bool) -> bool:
    """A PIN or an access code: digits (``4512#``, ``66-12-90``), or with ``letters`` also
    letters and digits (``4471B``, ``7f3k-9q2m-x8vz``)."""
    if _DIGITS.fullmatch(token):
        return True
    return (
        letters
        and not _RADIX.match(token)
        and len(token) >= 4
        and re.fullmatch(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*", token) is not None
        and any(char.isdigit() for char in token)
        and any(char.isalpha() for char in token)
        and not _MEASURE.fullmatch(token)
    )


def _shaped_key(token: str) -> bool:
    """A key or token: eight or more characters with letters and digits, not a version, an
    object id or an address."""
    core = token.replace("-", "").replace("_", "")
    return (
        len(core) >= 8
        and core.isalnum()
        and any(char.isdigit() for char in core)
        and any(char.isalpha() for char in core)
        and not _PUBLIC_ID.fullmatch(token)
    )


def iter_shaped_credentials(
    view: str, folded: str, found: set[int] | frozenset[int] = frozenset()
) -> Iterator[tuple[int, int, str]]:
    """``(start, end, kind)`` of each value that follows a credential cue without a verb, or
    comes before one, and has the shape of a credential (see the section comment). Values
    that start at an offset in ``found`` are already known."""
    for match in _LOOSE.finditer(folded):
        loose = None if match.start("token") in found else _loose_value(view, folded, match)
        if loose is not None:
            yield loose
    value_first = _VALUE_FIRST.finditer(folded) if _has_purpose(folded) else iter(())
    for match in value_first:
        group = next(name for name in ("token", "token2", "token3", "token4") if match.group(name))
        start, token = _token(view, match, group)
        if _DIGITS.fullmatch(token):
            yield start, start + len(token), PIN_KIND
        elif _shaped_password(token):
            yield start, start + len(token), PASSWORD_KIND
    for match in _BARE_KEY.finditer(folded):
        start, token = _token(view, match)
        line_start = folded.rfind("\n", 0, match.start()) + 1
        context = max(line_start, match.start() - _KEY_CONTEXT)
        if _shaped_password(token) and _KEY_PLACE.search(folded, context, match.start()):
            yield start, start + len(token), WIFI_KIND
    pairs = (_ADMIN_PAIR, _LOGIN_PAIR, _SET_TO)
    for match in (hit for pattern in pairs for hit in pattern.finditer(folded)):
        start, token = _token(view, match)
        if "/" not in token and _shaped_password(token):
            yield start, start + len(token), PASSWORD_KIND
    for match in _HEADING.finditer(folded):
        for word in _LIST_TOKEN.finditer(view, *match.span("rest")):
            value = word.group().rstrip(_TRAILING)
            if _shaped_password(value) and not _DIGITS.fullmatch(value):
                yield word.start(), word.start() + len(value), PASSWORD_KIND
    for match in _CJK_PHRASE.finditer(folded):
        if match.group("phrase")[0] not in _CJK_NOT_PHRASE:
            yield match.start("phrase"), match.end("phrase"), PASSWORD_KIND


def _loose_value(view: str, folded: str, match: re.Match[str]) -> tuple[int, int, str] | None:
    """``(start, end, kind)`` of the value after a cue with no verb, if it has the shape of
    the credential the cue names."""
    start, token = _token(view, match)
    if _MARKED.search(token) is None:  # every shape below has a digit or a symbol
        return None
    kind = _loose_kind(view, folded, match)
    if kind is None or _is_call(view, match.end("token")):
        return None
    if kind == PIN_KIND:
        letters = _access_code(folded, match)
        shaped = _shaped_code(token, letters=letters) and not _names_a_number(folded, match)
    elif _LOOSE_KEY.match(folded, match.start()) and not _in_parentheses(folded, match):
        shaped = _shaped_key(token)
    else:
        shaped = _shaped_password(token)
    return (start, start + len(token), kind) if shaped else None


def _in_parentheses(folded: str, match: re.Match[str]) -> bool:
    """Whether the value stands in parentheses after its cue (``API key (…)``): there it is
    judged by a password's shape rather than a key's."""
    return folded[match.start() : match.start("token")].rstrip().endswith(("(", "（"))


def _loose_kind(view: str, folded: str, match: re.Match[str]) -> str | None:
    """The kind of a loose match's cue; None where the cue is not one in this place: a
    lower-case ``pin`` with no verb or colon is the verb ("pin 2024 releases")."""
    at = match.start()
    if _LOOSE_PIN.match(folded, at) or _LOOSE_CODE.match(folded, at):
        if folded.startswith("pin", at) and not view.startswith("PIN", at):
            gap = folded[at + 3 : match.start("token")]
            if not re.search(r"[:=]|码|碼|\b(?:is|es|ist|was|war|lautet)\b", gap):
                return None
        return PIN_KIND
    return WIFI_KIND if _kind(folded, at) == WIFI_KIND else PASSWORD_KIND


def _access_code(folded: str, match: re.Match[str]) -> bool:
    """Whether a code cue names an access code, which may hold letters (``4471B``): a code
    word of its own (``Zugangscode``, ``验证码``) or ``code`` after a word of access ("entry
    code", "backup code"). A bare ``code`` before ``DEP0001`` names a number."""
    if _LOOSE_CODE.match(folded, match.start()) is None:
        return False
    if not folded.startswith(("code", "código", "codigo"), match.start()):
        return True
    if not folded.startswith("code", match.start()):
        return folded[match.start() : match.start("token")].strip() not in ("código", "codigo")
    before = _WORDS.findall(folded, max(0, match.start() - 24), match.start())
    return bool(before) and before[-1] in _ACCESS_WORDS


def _names_a_number(folded: str, match: re.Match[str]) -> bool:
    """Whether a generic ``code`` names a number that is no secret: "error code 4040",
    "código de error 4040", "status code 429"."""
    before = _WORDS.findall(folded, max(0, match.start() - 24), match.start())
    words = _WORDS.findall(folded, match.start(), match.start("token"))
    return bool(set(before[-1:] + words) & _NOT_SECRET_CODES)


# The Gate's fence: a random-looking token beside a credential word, or a generated one.
CREDENTIAL_WORD = lazy(
    r"(?<![a-z0-9_])(?:pass(?:word|wd|code|phrase|wort)|pwd|pin|kennwort|contrase(?:ña|na)|"
    r"clave|schl(?:ü|ue)ssel|key|token|secret|credentials?|login|api[ _-]?key)(?![a-z0-9_])"
    r"|密码|密碼|口令|密钥|秘钥|令牌",
)
_RANDOM_TOKEN = lazy(r"""[^\s"'`,;()<>\[\]{}\\]{12,200}""")
_NEAR = 60  # characters on either side of a credential word that count as beside it
# Git object ids and UUIDs name things; they are not secrets.
_PUBLIC_ID = lazy(
    r"[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    re.IGNORECASE,
)
_PUBLIC_PREFIXES = ("sha256:", "sha1:", "sha512:", "md5:", "http://", "https://", "[redacted:")


def looks_random(token: str) -> bool:
    """Whether ``token`` reads like a generated secret rather than a word, a version or a
    path: 12+ characters mixing upper case, lower case and digits with high entropy, or
    24+ letters and digits (hex included) with higher entropy."""
    token = token.rstrip(_TRAILING)
    if len(token) < 12 or token.lower().startswith(_PUBLIC_PREFIXES):
        return False
    if _PUBLIC_ID.fullmatch(token):
        return False
    upper = any(c.isupper() for c in token)
    lower = any(c.islower() for c in token)
    digit = any(c.isdigit() for c in token)
    entropy = _entropy(token)
    if upper and lower and digit and entropy >= 3.0:
        return True
    return len(token) >= 24 and (upper or lower) and digit and entropy >= 3.5


def looks_generated(token: str) -> bool:
    """Whether ``token`` is a generated secret even with no credential word beside it: 20+
    characters mixing upper case, lower case and digits at 3.7 bits a character or more,
    only a key's characters, and not words run together (``ThisIsALongName2024``). Such a
    string in a memory is a key pasted in a shape no rule knows; a memory has no reason to
    hold one."""
    token = token.rstrip(_TRAILING)
    if len(token) < 20 or not _KEY_CHARS.fullmatch(token) or not looks_random(token):
        return False
    worded = sum(len(run) for run in _WORD_RUN.findall(token))
    return (
        any(c.isupper() for c in token)
        and any(c.islower() for c in token)
        and any(c.isdigit() for c in token)
        and _entropy(token) >= 3.7
        and worded < 0.4 * len(token)
    )


# Runs of three or more letters of one case: most of a name (``EVENTLOG_ERROR_TYPE``,
# ``CamelCase``), little of a key.
_WORD_RUN = lazy("[a-z]{3,}|[A-Z]{3,}")
# A key's characters (base64, URL-safe or not): a name in code has dots, and more than two
# underscores or hyphens.
_KEY_CHARS = lazy(r"[A-Za-z0-9]+(?:[-_+=][A-Za-z0-9]+){0,2}={0,2}")


def _entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def iter_random_beside_credential(view: str, folded: str) -> Iterator[tuple[int, int]]:
    """Spans of random-looking tokens within ``_NEAR`` characters of a credential word on
    the same line, and of generated-looking ones anywhere (:func:`looks_generated`): what a
    credential looks like when no pattern knows its shape."""
    for token in _RANDOM_TOKEN.finditer(view):
        text = token.group()
        if looks_random(text) and (looks_generated(text) or _beside_credential(folded, token)):
            yield token.start(), token.start() + len(text.rstrip(_TRAILING))


def _beside_credential(folded: str, token: re.Match[str]) -> bool:
    """Whether a credential word stands within ``_NEAR`` characters of ``token``, on its line."""
    line_start = folded.rfind("\n", 0, token.start()) + 1
    line_end = folded.find("\n", token.end())
    line_end = len(folded) if line_end < 0 else line_end
    window_start = max(line_start, token.start() - _NEAR)
    window_end = min(line_end, token.end() + _NEAR)
    return (
        CREDENTIAL_WORD.search(folded, window_start, token.start()) is not None
        or CREDENTIAL_WORD.search(folded, token.end(), window_end) is not None
    )


# --- The third test: a cue earlier in the clause -------------------------------------------
#
# People also give a credential where no cue stands right before it: in a list of connection
# facts ("host db1.internal, port 5432, user app, pass …"), after a user name ("the kibana
# user is elastic / …"), in the second half of a clause ("the router login is admin and the
# secret bit is …"), or as "it's …" in the sentence after one that names the password. There
# the structure decides rather than a phrase: a credential cue earlier in the same clause, and
# after it a value with the shape of the credential the cue names, that a name label does
# not introduce (host, port, user, network: facts worth keeping) and that is not shaped like
# a fact (an address, a path, a file, a version, a name in code). A clause ends at a
# sentence's end, a semicolon or a line; a sentence that starts with "it's" / "es" / "现在是"
# goes on the one before it.

_PASSWORD_CUE, _CODE_CUE, _DEVICE_CUE = "password", "code", "device"
_CLAUSE_BREAK = lazy(r"[.!?](?=[ \t]|$)|[;\n。！？；]")
# A sentence that answers the one before it: "I changed the laptop password. It's …".
_GOES_ON = lazy(
    r"[ \t]*+(?:it['\u2019]s|it[ \t]++is|that['\u2019]s|now[ \t]++it['\u2019]s|es[ \t]++ist"
    r"|es(?![a-z0-9_ñ])|ist(?![a-z0-9_])|现在是|现在|是)"
)
_CUES = lazy(
    "|".join(
        (
            # Codes: digits are a value here.
            rf"(?P<{_CODE_CUE}>"
            + "|".join(
                (
                    *(
                        _word(word)
                        for word in """cvv cvv2 cvc otp 2fa mfa passcode prüfnummer
                        kartenprüfnummer einmalcode""".split()
                    ),
                    "pin(?<![a-z0-9_]pin)(?![a-z0-9_])",
                    r"(?:door|gate|entry|access|garage|alarm|lockbox|unlock|verification|login|sms"
                    r"|security|backup|recovery)[ \t-]?codes?",
                    "(?<![a-z0-9_])sim[ -]pin",
                    "one-time[ \t]++(?:code|password|pin)",
                    "two-factor|keypad|combination",
                    r"c(?:ó|o)digos?[ \t]++(?:de[ \t]++(?:un[ \t]++solo[ \t]++uso|seguridad"
                    r"|recuperaci(?:ó|o)n|verificaci(?:ó|o)n|acceso)|del?[ \t]++(?:portal|puerta"
                    r"|alarma|garaje))",
                    "wiederherstellungscodes?",
                    "恢复码|备用码|验证码|一次性|动态码|安全码|门禁码",
                )
            )
            + ")(?![a-z0-9_])",
            # Devices opened with a number: only digits after "with", "con", "mit", "用".
            f"(?P<{_DEVICE_CUE}>"
            + "|".join(
                (
                    *(
                        _word(word)
                        for word in """alarm alarma alarmanlage safe tresor lock candado
                        schloss""".split()
                    ),
                    "caja[ \t]++fuerte",
                    "保险柜|保险箱|报警器|门锁",
                )
            )
            + ")(?![a-z0-9_])",
            # Passwords, logins, keys: a value with a password's or a key's shape. Not a
            # table's key ("primary key", "clave primaria").
            rf"(?P<{_PASSWORD_CUE}>"
            + "|".join(
                (
                    *_PASSWORD_WORDS,
                    *(
                        _word(word)
                        for word in """passwords contraseñas zugangsdaten zugang secreto geheime
                        hmac""".split()
                    ),
                    # Not inside a name: ``github-token-2``, ``AGE-SECRET-KEY-1``.
                    *(
                        f"(?<![-_]){_word(word)}(?![-_]?[a-z0-9])"
                        for word in """creds credentials credenciales login logins secret auth
                        token apikey""".split()
                    ),
                    "(?<!primary )(?<!foreign )(?<!sort )(?<![-_])key(?<![a-z0-9_]key)"
                    "(?![-_]?[a-z0-9])",
                    "clave(?<![a-z0-9_]clave)(?![ \t]++(?:primaria|for(?:á|a)nea|ajena))",
                    *("密钥", "秘钥", "令牌"),
                    r"(?<![a-z0-9_])pass(?![a-z0-9_-])",
                    r"(?:wifi|wi-fi|wlan|wpa2?|network)[ \t-]?(?:key|schl(?:ü|ue)ssel)",
                    "凭据|凭证|登录|登陆|账号",
                )
            )
            + ")(?![a-z0-9_])",
        )
    )
)
# A name label: the value after it is a fact (a host, a port, a user, a network, an account).
_NAME_LABEL = lazy(
    r"(?:(?<![a-z0-9_])(?:host(?:name)?|server|servidor|port|puerto|user(?:name)?|usuario"
    r"|benutzer(?:name)?|as|como|als|network|red|netz|netzwerk|ssid|wifi"
    r"|wi-fi|wlan|e-?mail|correo|id|db|database|bucket|region|path|mandant|login|fingerprint)"
    r"|主机|端口|用户名?|网络名?|账号|邮箱|登录名)"
    r"(?:[ \t]*+(?:[:=：]|is|es|ist|是|为)?)*+[ \t]*+$"
)
_USER_LABEL = lazy(r"(?<![a-z0-9_])(?:user(?:name)?|usuario|benutzer|login)(?![a-z0-9_])")
_ENTERS = lazy(r"(?:(?<![a-z0-9_])(?:with|con|mit|in|is|es|ist|code)|[:：用是])[ \t]*+$")
_LEADING = ":=-\u2013\u2014>*`"
# How far after its cue a value may stand: a clause, not a paragraph.
_CUE_REACH = {_PASSWORD_CUE: 80, _CODE_CUE: 40, _DEVICE_CUE: 40}
_STRUCT_TOKEN = lazy(rf"[^\s,;()<>\[\]{{}}\\{_QUOTES}{_CJK}]{{1,128}}+")
_HOST = lazy(
    r"(?:[a-z0-9-]++\.)++[a-z]{2,}(?::[0-9]+)?(?:/\S*)?|[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?::[0-9]+)?"
)
_FILE = lazy(r"[\w.-]+\.[a-z]{1,5}(?:#[\w.-]*|:[0-9]+)?")
# Names of algorithms, protocols and versions that mix letters and digits.
_TECH = lazy(
    r"(?:ipv[46]|https?[0-9]?|oauth[0-9]?|tls[0-9.]*|ssl[0-9]?|sha-?[0-9]+|md5|utf-?(?:8|16)"
    r"|base(?:32|64)|ed25519|id_(?:ed25519|rsa|ecdsa|dsa)|rsa[0-9]*|x509|argon2(?:id|i|d)?"
    r"|pbkdf2|s3|ec2|k8s|i18n|l10n|h[23]|[a-z]*v[0-9]+|ssh-(?:ed25519|rsa|dss|ecdsa\S*))"
)
_CODE_LIKE = lazy(r"^[+?|^]|a-z|0-9|\?[:<=!]|^u\+[0-9a-f]{4}")
_VERSION_PART = lazy(r"v?[0-9]+(?:\.[0-9]+)*")
_UNITS = lazy(
    r"[ \t]*+(?:seconds?|secs?|minutes?|mins?|hours?|days?|weeks?|months?|years?|ms|digits?"
    r"|chars?|characters?|rows?|times|tries|attempts|%|segundos|minutos|d[íi]gitos|sekunden"
    r"|minuten|stellen|zeichen|秒|分钟|位|天)(?![a-z])"
)
_TYPE_VERBS = lazy(r"(?<![a-z0-9_])(?:type|enter|escribe|teclea|pon|gib|tippe)[ \t]++(?=[^\W\d_])")
_PHRASE_RUN = lazy(r"(?:[^\W\d_]{2,24}(?:[ \t]++|$)){4,6}")


def iter_clause_credentials(view: str, folded: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, kind)`` of each value after a credential cue earlier in its clause
    (see the section comment)."""
    fences = [match.span() for match in _FENCED.finditer(folded)]
    for start, end in _clauses(folded):
        if not _inside(fences, start):
            yield from _clause_values(view, folded, start, end)
    yield from _user_pairs(view, folded)
    for match in _MYSQL_FLAG.finditer(folded):
        start, token = _token(view, match)
        if _secret_shaped(token):
            yield start, start + len(token), PASSWORD_KIND


def _clauses(folded: str) -> Iterator[tuple[int, int]]:
    """Spans of the clauses of ``folded``; a sentence that answers the one before it (see
    :data:`_GOES_ON`) is joined to it."""
    start = 0
    for brk in _CLAUSE_BREAK.finditer(folded):
        if brk.group() != "\n" and _GOES_ON.match(folded, brk.end()):
            continue
        yield start, brk.start()
        start = brk.end()
    yield start, len(folded)


def _clause_values(view: str, folded: str, start: int, end: int) -> Iterator[tuple[int, int, str]]:
    # Each search below runs once per clause, so the cost stays linear in the text.
    held = [match.span() for match in _HELD.finditer(folded, start, end)]
    user = _USER_LABEL.search(folded, start, end)
    first_user = end if user is None else user.start()
    cues = [
        cue
        for cue in _CUES.finditer(folded, start, end)
        if _is_cue(view, folded, cue, first_user) and not _inside(held, cue.start())
    ]
    if not cues:
        return
    kinds = iter(cues)
    cue = next(kinds)
    following = next(kinds, None)
    reach_from = cue.end()  # the cue, or the last value of a list after it
    for word in _STRUCT_TOKEN.finditer(view, cues[0].end(), end):
        while following is not None and following.end() <= word.start():
            cue, following = following, next(kinds, None)
            reach_from = cue.end()
        if following is not None and word.start() >= following.start():
            continue  # the word is a cue itself
        raw = word.group().rstrip(_TRAILING + "*`")
        token = raw.lstrip(_LEADING)
        at = word.start() + len(raw) - len(token)
        if _inside(held, at) or at - reach_from > _CUE_REACH[str(cue.lastgroup)]:
            continue
        kind = _value_kind(view, folded, cue, at, token)
        if kind is not None:
            reach_from = at + len(token)
            yield at, at + len(token), kind
    said = [cue.end() for cue in cues if cue.lastgroup == _PASSWORD_CUE]
    for verb in _TYPE_VERBS.finditer(folded, said[0] if said else end, end):
        phrase = _PHRASE_RUN.fullmatch(view, verb.end(), end)
        if phrase is not None and _typed_phrase(phrase.group()):
            yield verb.end(), verb.end() + len(phrase.group().rstrip()), PASSWORD_KIND


# A block of code between fences: no prose there (the rules read its assignments).
_FENCED = lazy(r"^[ \t]*+(```|~~~)[^\n]*+\n.*?(?:^[ \t]*+\1|\Z)", re.DOTALL | re.MULTILINE)
# A placeholder an earlier pass left: neither a cue nor a value.
_HELD = lazy(r"\[redacted:[^\]\s]{0,64}\]")


def _inside(spans: list[tuple[int, int]], at: int) -> bool:
    """Whether ``at`` falls in one of the sorted, disjoint ``spans``."""
    index = bisect.bisect_right(spans, at, key=lambda span: span[0]) - 1
    return index >= 0 and spans[index][0] <= at < spans[index][1]


def _is_cue(view: str, folded: str, cue: re.Match[str], first_user: int) -> bool:
    """Whether ``cue`` names a credential here: a bare ``pass`` only after a user ("user
    uploads pass …"), a lower-case ``pin`` only before a code word or a verb ("pin numpy")."""
    word = folded[cue.start() : cue.end()]
    if word == "pass":
        return first_user < cue.start()
    if word == "pin" and not view.startswith("PIN", cue.start()):
        return _PIN_AFTER.match(folded, cue.end()) is not None
    return True


_PIN_AFTER = lazy(r"[ \t]*+(?:code|number|nummer|码|碼|[:=]|is|es|ist)(?![a-z0-9_])")


def _typed_phrase(phrase: str) -> bool:
    """A passphrase typed at a prompt: four to six words, none of prose or a place."""
    words = phrase.lower().split()
    return words[0] not in _NOT_VALUES | {"yes", "no", "ok"} and not any(
        word in _CONTINUATIONS or word in PLACES for word in words
    )


def _value_kind(view: str, folded: str, cue: re.Match[str], at: int, token: str) -> str | None:
    """The kind of ``token`` at ``at`` after ``cue``, or None if it is no value there."""
    lower = token.lower()
    if len(token) < 3 or _fact_shaped(lower) or _PUBLIC_ID.fullmatch(token):
        return None
    before = folded[max(0, at - 24) : at]
    if _NAME_LABEL.search(before) or _UNITS.match(folded, at + len(token)):
        return None
    if _is_call(view, at + len(token)):
        return None
    if cue.lastgroup == _DEVICE_CUE:
        return PIN_KIND if _DIGITS.fullmatch(token) and _ENTERS.search(before) else None
    if cue.lastgroup == _CODE_CUE:
        if re.fullmatch(r"[0-9]{3,12}", token):
            return PIN_KIND
        if len(token) >= 6 and _shaped_code(token, letters=True):  # ``4f7k2-m9q8z``, not ``S105``
            return PIN_KIND
        return None
    keyed = looks_random(token) or (len(token) >= 16 and _shaped_key(token))
    return PASSWORD_KIND if keyed or _secret_shaped(token) else None


def _fact_shaped(lower: str) -> bool:
    """Whether a token reads as a fact: an address, a path, a file, an e-mail, a version, a
    placeholder, the name of an algorithm (``argon2id``), or a piece of code such as a
    pattern (``[a-z0-9_]``, ``(?:ü|ue)``) or a code point (``U+FF48``)."""
    return bool(
        _CODE_LIKE.search(lower)
        or ("|" in lower and not any(char.isdigit() for char in lower))
        or _HOST.fullmatch(lower)
        or _EMAIL.fullmatch(lower)
        or _VERSION.fullmatch(lower)
        or _MEASURE.fullmatch(lower)
        or _TECH.fullmatch(lower)
        or "/" in lower
        or lower.startswith(_NOT_STARTS)
        or "://" in lower
        or lower.startswith(_PUBLIC_PREFIXES)
        or (_FILE.fullmatch(lower) and not _MARKED.search(lower.rsplit(".", 1)[0]))
    )


def _secret_shaped(token: str) -> bool:
    """A password by its shape where no cue stands right before it, stricter than
    :func:`_shaped_password`: a symbol (``Cinder!Bloom5``), or digits with two or more
    words (``otter-42-blue``, ``Qx4-barn-lantern``), or digits inside mixed case over eight
    characters (``Gravel7Moon``); never a version at the end (``kms-key-v2``)."""
    if not _shaped_password(token) or _DIGITS.fullmatch(token):
        return False
    if _MARKS & set(token):
        return True
    if not any(char.isdigit() for char in token):
        return False
    parts = re.split(r"[-_]", token)
    if _VERSION_PART.fullmatch(parts[-1].lower()) and parts[-1][:1] in "vV":
        return False
    worded = [part for part in parts if any(char.isalpha() for char in part)]
    if len(worded) >= 2:
        return True
    inner_upper = any(char.isupper() for char in token[1:])
    return len(token) >= 8 and inner_upper and any(char.islower() for char in token)


# A user and a password after a user label: "the kibana user is elastic / …".
_USER_PAIR = lazy(
    r"(?:(?<![a-z0-9_])(?:user(?:name)?|usuario|benutzer(?:name)?|account|cuenta|konto|wifi"
    r"|wi-fi|wlan|ssid|network|red|netz)|用户名?|账号)"
    r"(?:[ \t]++(?:is|es|ist)|[ \t]*+[:=：])?[ \t]*+[^\s/:,;]{1,64}[ \t]*+/[ \t]*+"
    rf"(?P<token>{_TOKEN})"
)
# ``mysql -u root -p…``: the password glued to the flag.
_MYSQL_FLAG = lazy(
    r"(?<![a-z0-9_])(?:mysql|mysqldump|mysqladmin|mariadb)(?![a-z0-9_])[^\n]{0,80}?"
    r"[ \t]-p(?P<token>[^\s'\"`]{4,128})"
)


def _user_pairs(view: str, folded: str) -> Iterator[tuple[int, int, str]]:
    for match in _USER_PAIR.finditer(folded):
        start, token = _token(view, match)
        if _secret_shaped(token) and not _fact_shaped(token.lower()):
            yield start, start + len(token), PASSWORD_KIND
