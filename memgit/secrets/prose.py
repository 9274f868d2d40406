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

import math
import re
from collections import Counter
from collections.abc import Iterator

__all__ = [
    "CREDENTIAL_WORD",
    "FUNCTION_WORDS",
    "PLACES",
    "PROSE_KINDS",
    "iter_prose_credentials",
    "iter_random_beside_credential",
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
    *(_word(word) for word in ("password", "passwd", "passcode", "passphrase")),
    "passwort",
    "kennwort",
    *(_word(word) for word in ("contraseña", "contrasena")),
    _word("clave") + "[ \t]+de[ \t]+acceso",
    "密码",
    "密碼",
    "口令",
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
    r"(?:[ \t]++(?:for|to|of|on|at|in|de|del|en|para|für|fuer|zum|zur|vom|von|des|im|am|bei|beim)"
    r"""(?:[ \t]++[^\s:=,;.!?"'`()<>\[\]{}]{1,30}){1,4}?)?"""
)
_VERB_END = rf"(?![{_LETTER}])"
_COPULA = (
    r"[ \t]*+(?:[:=](?![=:])|(?:"
    rf"(?:(?<=[ \t])(?:is|was|are|es|era|ist|war|lautet|heißt|heisst){_VERB_END}"
    rf"|['\u2019]s{_VERB_END})"
    r"(?:[ \t]++(?:now|still|currently|actually|just|ahora|todavía|jetzt|nun|noch"
    rf"|immer[ \t]+noch){_VERB_END})?"
    rf"(?:[ \t]++(?:set|changed|updated)[ \t]++to{_VERB_END})?"
    rf"|(?<=[ \t])(?:has[ \t]++been[ \t]++)?(?:set|changed|updated|reset)[ \t]++to{_VERB_END}"
    r"|就是|是|为|為|(?:改成|改为|改為|设为|设置为|設為)了?"
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
_SCAN = re.compile(
    f"(?:{'|'.join((*_PASSWORD_WORDS, *_PIN_WORDS, *_WIFI_WORDS))}){_COMPLEMENT}{_COPULA}{_VALUE}"
)
# A login given as ``user / password`` or ``user:password``: the part after the separator.
_LOGIN_WORDS = (
    *(_word(word) for word in ("login", "credentials", "creds", "zugangsdaten", "credenciales")),
    "登录",
    "账号",
)
_PAIR = re.compile(
    f"(?:{'|'.join(_LOGIN_WORDS)}){_COMPLEMENT}{_COPULA}"
    rf"[^\s/:,;]{{1,64}}[ \t]*+[/:][ \t]*+(?P<token>{_TOKEN})"
)
_PIN_STARTS = ("pin", "código", "codigo", "geheimzahl")
_WIFI_STARTS = ("wifi", "wi-fi", "wlan", "wireless", "network", "netzwerk", "wpa")
_WIFI_CLAVE = re.compile(_WIFI_WORDS[-1])

# Words of ordinary prose in the four languages: articles, prepositions, pronouns, adverbs,
# and what one does with a password (see, ask, stored). A passphrase of several words
# holds none of them ("Password: see the vault" is prose).
FUNCTION_WORDS = frozenset(
    """
    the a an in at on of for from to with by into under inside as is are was were be been it its
    this that these those there here what which who where when how my your our his her their
    mine yours ours not no none null nil n/a also still just now only too very really quite
    always never please tbd todo currently actually ahora todavía nun somewhere elsewhere
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
_DESCRIPTION = re.compile(
    r"[0-9]+[+-]?(?:digits?|chars?|characters?|letters?|stellig\w*|zeichen|d[íi]gitos|caracteres|位)"
)
_PLACEHOLDER = re.compile(r"[$<{%]|[*x.…•#_-]+$")
_PIN = re.compile(r"[0-9]{4,12}")
# A hyphen, apostrophe or dot between letters joins words (``case-sensitive``,
# ``z.string``): no symbol that makes a value of a word.
_INNER_JOIN = re.compile(r"(?<=[^\W\d_])[-'\u2019.](?=[^\W\d_])")
_NEXT_WORD = re.compile(r"[^\s.,;:!?]{1,16}")


def iter_prose_credentials(view: str, folded: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, kind)`` of each credential value written in prose. ``folded`` is
    ``view`` lower-cased with the same offsets; the value is judged on ``view``."""
    for match in _SCAN.finditer(folded):
        kind = _kind(folded, match.start())
        span = _value_span(view, match, kind)
        if span is not None:
            yield span[0], span[1], kind
    for match in _PAIR.finditer(folded):
        span = _token_span(view, match)
        if span is not None:
            yield span[0], span[1], PASSWORD_KIND


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
        start, raw_end = match.span("token")
        token = view[start:raw_end].rstrip(_TRAILING)
        return (start, start + len(token)) if _PIN.fullmatch(token) else None
    return _token_span(view, match)


def _token_span(view: str, match: re.Match[str]) -> tuple[int, int] | None:
    """The span of the ``token`` group if it is a value (see :func:`_strength`)."""
    start, raw_end = match.span("token")
    token = view[start:raw_end].rstrip(_TRAILING)
    end = start + len(token)
    strength = _strength(token)
    if strength is None:
        return None
    if strength == _STRONG or end < raw_end or _clause_ends(view, end):
        return start, end
    return None


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
    if _PLACEHOLDER.match(word) or _DESCRIPTION.fullmatch(word):
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
    if view[end : end + 1] == "(":  # a call in code: ``password: z.string()``
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


def _is_cjk(char: str) -> bool:
    return "\u3000" <= char <= "\u9fff" or "\uac00" <= char <= "\ud7af" or char >= "\uff00"


# The Gate's fence: a long random-looking token beside a credential word.
CREDENTIAL_WORD = re.compile(
    r"(?<![a-z0-9_])(?:pass(?:word|wd|code|phrase|wort)|pwd|pin|kennwort|contrase(?:ña|na)|"
    r"clave|schl(?:ü|ue)ssel|key|token|secret|credentials?|login|api[ _-]?key)(?![a-z0-9_])"
    r"|密码|密碼|口令|密钥|秘钥|令牌",
)
_RANDOM_TOKEN = re.compile(r"""[^\s"'`,;()<>\[\]{}\\]{12,200}""")
_NEAR = 60  # characters on either side of a credential word that count as beside it
# Git object ids and UUIDs name things; they are not secrets.
_PUBLIC_ID = re.compile(
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


def _entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def iter_random_beside_credential(view: str, folded: str) -> Iterator[tuple[int, int]]:
    """Spans of random-looking tokens within ``_NEAR`` characters of a credential word on
    the same line: what a credential looks like when no pattern knows its shape."""
    for token in _RANDOM_TOKEN.finditer(view):
        if not looks_random(token.group()):
            continue
        line_start = folded.rfind("\n", 0, token.start()) + 1
        line_end = folded.find("\n", token.end())
        line_end = len(folded) if line_end < 0 else line_end
        window_start = max(line_start, token.start() - _NEAR)
        window_end = min(line_end, token.end() + _NEAR)
        before = CREDENTIAL_WORD.search(folded, window_start, token.start())
        after = CREDENTIAL_WORD.search(folded, token.end(), window_end)
        if before is not None or after is not None:
            yield token.start(), token.start() + len(token.group().rstrip(_TRAILING))
