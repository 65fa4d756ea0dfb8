# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Just enough of PEP 440 (versions, specifiers) and PEP 508 (requirements, markers).

Private to volta.serving. The target hosts' Python and the engine venvs do not
always have ``packaging``, so the modules that read wheel metadata use this
instead. It covers what distribution metadata uses in practice: ``==``,
``!=``, ``<=``, ``>=``, ``<``, ``>``, ``~=``, ``===``, ``==X.*`` prefix
matches, local version labels, extras, and markers with ``and``/``or``/
parentheses/``in``/``not in``.
"""

from __future__ import annotations

import re

_VERSION_RE = re.compile(
    r"""^\s*v?
    (?:(?P<epoch>\d+)!)?
    (?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d+)?)?
    (?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_PRE_NORMAL = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc"}
_NAME_RE = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*")
_OPS = ("===", "~=", "==", "!=", "<=", ">=", "<", ">")

# Marker variables whose values compare as versions (PEP 508).
_VERSION_VARS = {"python_version", "python_full_version", "implementation_version", "platform_release"}


class RequirementError(ValueError):
    """A requirement, version or marker this module cannot read."""


def canonical_name(name):
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", str(name)).lower()


class Version:
    """A PEP 440 version that orders like pip orders it."""

    def __init__(self, text):
        match = _VERSION_RE.match(str(text))
        if not match:
            raise RequirementError(f"not a PEP 440 version: {text!r}")
        self.text = str(text).strip()
        self.epoch = int(match.group("epoch") or 0)
        self.release = tuple(int(p) for p in match.group("release").split("."))
        pre_l = match.group("pre_l")
        self.pre = None
        if pre_l:
            pre_l = _PRE_NORMAL.get(pre_l.lower(), pre_l.lower())
            self.pre = (pre_l, int(match.group("pre_n") or 0))
        post = match.group("post_n1") or match.group("post_n2")
        self.post = int(post) if post is not None else (0 if match.group("post_l") else None)
        self.dev = None
        if match.group("dev_l"):
            self.dev = int(match.group("dev_n") or 0)
        self.local = match.group("local").lower().replace("-", ".").replace("_", ".") if match.group("local") else None

    @property
    def public(self):
        out = ".".join(str(p) for p in self.release)
        if self.epoch:
            out = f"{self.epoch}!{out}"
        if self.pre:
            out += f"{self.pre[0]}{self.pre[1]}"
        if self.post is not None:
            out += f".post{self.post}"
        if self.dev is not None:
            out += f".dev{self.dev}"
        return out

    def _key(self, with_local=True):
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        # dev-only releases sort before pre-releases; no pre/post/dev sorts after pre-releases.
        if self.pre is None and self.post is None and self.dev is not None:
            pre = (-1, "", 0)
        elif self.pre is None:
            pre = (1, "", 0)
        else:
            pre = (0, self.pre[0], self.pre[1])
        post = (-1,) if self.post is None else (0, self.post)
        dev = (1,) if self.dev is None else (0, self.dev)
        local = ()
        if with_local and self.local:
            local = tuple((1, int(p), "") if p.isdigit() else (0, 0, p) for p in self.local.split("."))
        return (self.epoch, tuple(release), pre, post, dev, local)

    def __eq__(self, other):
        return isinstance(other, Version) and self._key() == other._key()

    def __lt__(self, other):
        return self._key() < other._key()

    def __le__(self, other):
        return self._key() <= other._key()

    def __gt__(self, other):
        return self._key() > other._key()

    def __ge__(self, other):
        return self._key() >= other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"Version({self.text!r})"

    def __str__(self):
        return self.text


def _release_prefix_match(version, prefix_text):
    """``==1.2.*``: the public release of *version* starts with *prefix_text*'s release."""
    prefix = Version(prefix_text)
    want = list(prefix.release)
    have = list(version.release) + [0] * max(0, len(want) - len(version.release))
    return version.epoch == prefix.epoch and have[: len(want)] == want


def _one_clause(op, target, version):
    if op == "===":
        return str(version) == target
    if target.endswith(".*"):
        if op not in ("==", "!="):
            raise RequirementError(f"'.*' is only valid with == and !=: {op}{target}")
        result = _release_prefix_match(version, target[:-2])
        return result if op == "==" else not result
    spec = Version(target)
    # A specifier without a local label ignores the candidate's local label (PEP 440).
    cand = version if spec.local else Version(version.public)
    if op == "==":
        return cand == spec
    if op == "!=":
        return cand != spec
    if op == "<=":
        return cand <= spec
    if op == ">=":
        return cand >= spec
    if op == "<":
        return cand < spec and not (spec.pre is None and cand.pre is not None and cand.release == spec.release)
    if op == ">":
        return cand > spec and not (cand.post is not None and spec.post is None and cand.release == spec.release)
    if op == "~=":
        if len(spec.release) < 2:
            raise RequirementError(f"~= needs at least two release parts: {target}")
        prefix = ".".join(str(p) for p in spec.release[:-1])
        if spec.epoch:
            prefix = f"{spec.epoch}!{prefix}"
        return cand >= spec and _release_prefix_match(cand, prefix)
    raise RequirementError(f"unknown operator {op!r}")


def split_specifier(spec):
    """``'>=1.0,<2'`` -> ``[('>=', '1.0'), ('<', '2')]``."""
    clauses = []
    for part in (spec or "").split(","):
        raw = part.strip()
        if not raw:
            continue
        for op in _OPS:
            if raw.startswith(op):
                clauses.append((op, raw[len(op):].strip()))
                break
        else:
            raise RequirementError(f"cannot read version specifier {raw!r}")
    return clauses


def specifier_contains(spec, version):
    """True when *version* (text or Version) satisfies every clause of *spec* (empty: anything)."""
    if not isinstance(version, Version):
        version = Version(version)
    return all(_one_clause(op, target, version) for op, target in split_specifier(spec))


def parse_requirement(text):
    """Read one PEP 508 requirement: dict(name, extras, specifier, url, marker)."""
    body, _sep, marker = str(text).partition(";")
    marker = marker.strip() or None
    match = _NAME_RE.match(body)
    if not match:
        raise RequirementError(f"cannot read requirement {text!r}")
    name = match.group(1)
    rest = body[match.end():]
    extras = []
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            raise RequirementError(f"unclosed extras in requirement {text!r}")
        extras = [canonical_name(e.strip()) for e in rest[1:end].split(",") if e.strip()]
        rest = rest[end + 1:].strip()
    url = None
    spec = rest.strip()
    if spec.startswith("@"):
        url, spec = spec[1:].strip(), ""
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1].strip()
    spec = re.sub(r"\s+", "", spec)
    split_specifier(spec)  # validate
    return {"name": name, "key": canonical_name(name), "extras": extras, "specifier": spec, "url": url,
            "marker": marker}


def format_requirement(req, with_marker=False):
    """Write a parsed requirement back as text."""
    out = req["name"]
    if req.get("extras"):
        out += "[" + ",".join(req["extras"]) + "]"
    if req.get("url"):
        out += " @ " + req["url"]
    else:
        out += req.get("specifier") or ""
    if with_marker and req.get("marker"):
        out += "; " + req["marker"]
    return out


# --------------------------------------------------------------------------------------
# markers
_TOKEN_RE = re.compile(
    r"""\s*(?:
    (?P<str>'[^']*'|"[^"]*")
    |(?P<op>===|==|!=|<=|>=|~=|<|>|\(|\))
    |(?P<word>not\s+in\b|in\b|and\b|or\b|[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)


def _tokens(marker):
    pos, out = 0, []
    text = marker.strip()
    while pos < len(text):
        match = _TOKEN_RE.match(text, pos)
        if not match or match.end() == pos:
            raise RequirementError(f"cannot read marker {marker!r} at {text[pos:]!r}")
        pos = match.end()
        if match.group("str") is not None:
            out.append(("str", match.group("str")[1:-1]))
        elif match.group("op") is not None:
            out.append(("op", match.group("op")))
        else:
            word = re.sub(r"\s+", " ", match.group("word"))
            out.append(("kw", word) if word in ("and", "or", "in", "not in") else ("var", word))
    return out


class _MarkerParser:
    def __init__(self, marker, env):
        self.marker = marker
        self.tokens = _tokens(marker)
        self.pos = 0
        self.env = env

    def _peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def _take(self):
        tok = self._peek()
        self.pos += 1
        return tok

    def parse(self):
        value = self._or()
        if self.pos != len(self.tokens):
            raise RequirementError(f"unexpected {self._peek()[1]!r} in marker {self.marker!r}")
        return value

    def _or(self):
        value = self._and()
        while self._peek() == ("kw", "or"):
            self._take()
            rhs = self._and()
            value = value or rhs
        return value

    def _and(self):
        value = self._atom()
        while self._peek() == ("kw", "and"):
            self._take()
            rhs = self._atom()
            value = value and rhs
        return value

    def _atom(self):
        if self._peek() == ("op", "("):
            self._take()
            value = self._or()
            if self._take() != ("op", ")"):
                raise RequirementError(f"missing ')' in marker {self.marker!r}")
            return value
        lhs = self._operand()
        kind, op = self._take()
        if kind not in ("op", "kw") or op in ("(", ")", "and", "or"):
            raise RequirementError(f"expected a comparison in marker {self.marker!r}")
        rhs = self._operand()
        return _compare(lhs, op, rhs)

    def _operand(self):
        kind, value = self._take()
        if kind == "str":
            return (None, value)
        if kind == "var":
            if value not in self.env:
                raise RequirementError(f"unknown marker variable {value!r} in {self.marker!r}")
            return (value, self.env[value])
        raise RequirementError(f"expected a value in marker {self.marker!r}")


def _compare(lhs, op, rhs):
    lvar, lval = lhs
    rvar, rval = rhs
    if lvar == "extra" or rvar == "extra":
        lval, rval = canonical_name(lval), canonical_name(rval)
    if op == "in":
        return lval in rval
    if op == "not in":
        return lval not in rval
    if (lvar in _VERSION_VARS or rvar in _VERSION_VARS) and op in _OPS:
        try:
            return specifier_contains(f"{op}{rval}", lval)
        except RequirementError:
            pass
    if op in ("==", "==="):
        return lval == rval
    if op == "!=":
        return lval != rval
    try:
        return specifier_contains(f"{op}{rval}", lval)
    except RequirementError as exc:
        raise RequirementError(f"cannot compare {lval!r} {op} {rval!r}") from exc


def evaluate_marker(marker, env, extras=("",)):
    """True when *marker* holds in *env* for at least one of *extras* (``''`` = no extra)."""
    if not marker:
        return True
    for extra in extras or ("",):
        scope = dict(env)
        scope["extra"] = extra or ""
        if _MarkerParser(marker, scope).parse():
            return True
    return False
