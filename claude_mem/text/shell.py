"""One reading of a shell command line: its commands, each without its scaffolding.

`cd repo && FOO=1 sudo -E uv run --with x python -m pytest -q tests/x.py 2>&1 | tail -5` is two
commands, `pytest -q tests/x.py` (its `2>&1` a redirection, not an argument) and `tail -5`;
the `cd` is kept as a set-up command (it runs nothing), the assignment, the wrappers (`sudo`,
`time`, `env`, `timeout`, ...) and the runners (`python -m`, `uv run`, `npx`, ...) are gone.

Both readers of commands use this: the pre hook's lookup key (text/command_keys.py, which is
why it takes nothing but the standard library, no regex either: a hook pays for every import
and compile) and the worker's heuristic titles and kinds (worker/heuristic/bash.py). One pass over the text with a stack of open quotes and
substitutions: linear on any input, and it never raises -- an unclosed quote runs to the end
of the text, as the shell would read it were more to come.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterator

WORD, REDIRECT, OPERATOR = "word", "redirect", "operator"
# Operators that end a command, longest first. Parentheses only group: they end a word, and
# `(cd x && make)` reads as `cd x && make`.
OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&")
_WORD_END = frozenset(" \t\r\n;&|()<>")
_PLAIN_END = _WORD_END | frozenset("'\"\\$`")  # what a word's plain run stops at
_QUOTED_SPECIAL = frozenset('"\\$`')  # and a double-quoted run
_REDIRECT_START = frozenset("<>&0123456789")
_TOKEN_START = _PLAIN_END | _REDIRECT_START | frozenset("#")  # what may start something other than a plain word
_REDIRECTS = ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">&", ">|", ">")
# Commands that change the shell's state and run nothing: what follows them is what ran.
SETUP = frozenset(("cd", "pushd", "popd", "source", ".", "export", "set", "unset", "alias", "shopt", "umask"))
# Shell grammar in front of a command (`if pytest; then ...`), and the words that close it.
_KEYWORDS = frozenset(("!", "{", "if", "then", "else", "elif", "do", "while", "until"))
_CLOSERS = frozenset(("}", "fi", "done", "esac"))
_HEADERS = frozenset(("for", "select", "case", "function"))  # a loop or case header runs nothing itself
# Wrappers run the command after their options; the options listed take a value.
WRAPPERS = {
    "sudo": frozenset(("-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group", "--host",
                       "--prompt", "--chdir")),
    "doas": frozenset(("-u", "-C")),
    "time": frozenset(("-f", "-o", "--format", "--output")),
    "nice": frozenset(("-n", "--adjustment")),
    "nohup": frozenset(),
    "exec": frozenset(("-a",)),
    "command": frozenset(),
    "stdbuf": frozenset(("-i", "-o", "-e", "--input", "--output", "--error")),
    "timeout": frozenset(("-s", "-k", "--signal", "--kill-after")),
    "env": frozenset(("-u", "-C", "-S", "--unset", "--chdir", "--split-string")),
}
# Runners: `uv run`, `npx`... then the tool that matters; python's `-m` is handled on its own.
RUNNERS = {"uv": "run", "poetry": "run", "pipenv": "run", "pdm": "run", "hatch": "run", "rye": "run", "pnpm": "exec",
           "bundle": "exec"}
LAUNCHERS = frozenset(("npx", "bunx", "pnpx", "uvx"))
RUNNER_OPTIONS = frozenset(("--with", "--with-editable", "--with-requirements", "--python", "-p", "--package", "--extra",
                            "--group", "--only-group", "--no-group", "--env-file", "--directory", "--project", "--index",
                            "--default-index", "--index-url", "--extra-index-url", "--from", "-c", "--call"))
PYTHON_OPTIONS = frozenset(("-W", "-X", "--check-hash-based-pycs"))
# A tool's options before its subcommand that say where, not what (`git -C /repo push` is `git push`).
GLOBAL_OPTIONS = {"git": frozenset(("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                                    "--config-env", "--super-prefix"))}
# Words that may stand in front of the program, or make its options scaffolding too.
_FRONT = _KEYWORDS | _CLOSERS | _HEADERS | WRAPPERS.keys() | RUNNERS.keys() | LAUNCHERS | GLOBAL_OPTIONS.keys()


class Token:
    """A word (`text` unquoted, `raw` as written), a redirection (`text` the operator, `target`
    the word after it) or an operator (`text`)."""

    __slots__ = ("kind", "raw", "target", "text")

    def __init__(self, kind: str, text: str, raw: str, target: str = "") -> None:
        self.kind, self.text, self.raw, self.target = kind, text, raw, target

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.raw!r})"


class Command:
    """One simple command: `tokens` are its words and redirections from the program on, in the
    order written; `op` is the operator that ended it ("" at the end, "\\n" for a new line);
    `setup` says it only changed the shell's state (a `cd`, an `export`, bare assignments)."""

    __slots__ = ("op", "setup", "tokens")

    def __init__(self, tokens: list[Token], op: str, setup: bool) -> None:
        self.tokens, self.op, self.setup = tokens, op, setup

    @property
    def words(self) -> list[str]:
        return [t.text for t in self.tokens if t.kind == WORD]

    @property
    def program(self) -> str:
        """The program's name without its folder (`.venv/bin/pytest` is `pytest`), "" for none."""
        for t in self.tokens:
            if t.kind == WORD:
                return t.text.rpartition("/")[2] or t.text
        return ""

    @property
    def args(self) -> list[str]:
        return self.words[1:]

    def __repr__(self) -> str:
        return f"Command({' '.join(t.raw for t in self.tokens)!r}, op={self.op!r}, setup={self.setup})"


_OPERATOR_TOKENS = {op: Token(OPERATOR, op, op) for op in OPERATORS}  # shared: operators are only read
_NEWLINE = Token(OPERATOR, "\n", "\n")


def commands(line: str) -> Iterator[Command]:
    """The line's commands in order, lazily (the first one of interest may be all a caller needs);
    nothing between two operators (`;;`, a lone `&&`) is no command."""
    parts: list[Token] = []
    for token in tokens(line):
        if token.kind != OPERATOR:
            parts.append(token)
            continue
        if parts:
            yield _command(parts, token.text)
            parts = []
    if parts:
        yield _command(parts, "")


def tokens(line: str) -> Iterator[Token]:
    """Words, redirections and operators; comments, line continuations, parentheses and heredoc
    bodies are dropped."""
    i, n = 0, len(line)
    heredocs: list[tuple[str, bool]] = []
    while i < n:
        c = line[i]
        if c not in _TOKEN_START:  # a plain word, read here: most words are, and a call costs
            end = i + 1
            while end < n and line[end] not in _PLAIN_END:
                end += 1
            if end == n or line[end] in _WORD_END:
                raw = line[i:end]
                yield Token(WORD, raw, raw)
                i = end
                continue
            text, end = _word(line, i)
            yield Token(WORD, text, line[i:end])
            i = end
        elif c in " \t\r()":
            i += 1
        elif c == "\n":
            yield _NEWLINE
            i = _skip_heredocs(line, i + 1, heredocs) if heredocs else i + 1
            heredocs = []
        elif c == "#":  # a comment, at the start of a word only: `a#b` is a word
            end = line.find("\n", i)
            i = n if end < 0 else end
        elif c == "\\" and line.startswith("\n", i + 1):
            i += 2
        elif c in _REDIRECT_START and (redirect := _redirect_at(line, i)) is not None:
            token, i = redirect
            if token.text in ("<<", "<<-"):
                heredocs.append((token.target, token.text == "<<-"))
            yield token
        elif c in "&|;":
            op = next(o for o in OPERATORS if line.startswith(o, i))
            yield _OPERATOR_TOKENS[op]
            i += len(op)
        else:
            text, end = _word(line, i)
            yield Token(WORD, text, line[i:end])
            i = end


def _redirect_at(line: str, i: int) -> tuple[Token, int] | None:
    """`2>&1`, `>/dev/null`, `<<'EOF'`, `&> log` at i, with the index after its target."""
    j, n = i, len(line)
    while j < n and "0" <= line[j] <= "9":
        j += 1
    if j == n or line[j] not in "<>&" or (line[j] == "&" and not line.startswith("&>", j)):
        return None
    if j > i and line[j] == "&":  # `2&>x` is a word `2` put in the background: not ours to guess
        return None
    op = next(o for o in _REDIRECTS if line.startswith(o, j))
    k = j + len(op)
    while k < n and line[k] in " \t":
        k += 1
    target, end = ("", k) if k == n or line[k] in _WORD_END else _word(line, k)
    return Token(REDIRECT, op, line[i:end], target), end


def _word(line: str, i: int) -> tuple[str, int]:
    """The word starting at i, unquoted, and where it ends. Quotes at the word's own level are
    removed and backslash escapes resolved; what is inside `$(...)`, backquotes and `${...}` is
    kept as written. The stack holds what closes each open context."""
    n = len(line)
    pieces: list[str] = []
    start = i  # the start of the text not yet copied into pieces
    stack: list[str] = []
    heredocs: list[tuple[str, bool]] = []  # opened inside `$(...)`: `"$(cat <<'EOF' ... EOF)"`
    while i < n:
        if not stack:  # the plain run, in a tight loop: most of any command is plain words
            while i < n and line[i] not in _PLAIN_END:
                i += 1
            if i >= n or line[i] in _WORD_END:
                break
        elif stack[-1] == '"':
            while i < n and line[i] not in _QUOTED_SPECIAL:
                i += 1
        if i >= n:
            break
        c = line[i]
        top = stack[-1] if stack else ""
        if top == "'":
            end = line.find("'", i)
            if end < 0:
                i = n
                break
            stack.pop()
            if not stack:
                pieces.append(line[start:end])
                start = end + 1
            i = end + 1
        elif c == "\\":
            if not stack or (stack == ['"'] and line[i + 1:i + 2] in '$`"\\\n'):
                pieces.append(line[start:i])
                start = i + 1 if line[i + 1:i + 2] != "\n" else i + 2  # a continuation leaves nothing
            i += 2
        elif top == "$'" or top == "`":
            if c == top[-1]:
                stack.pop()
                if not stack and top == "$'":
                    pieces.append(line[start:i])
                    start = i + 1
            i += 1
        elif c == "$" and line[i + 1:i + 2] in ("(", "{"):
            stack.append(")" if line[i + 1] == "(" else "}")
            i += 2
        elif top == ")" and c == "<" and line.startswith("<<", i) and not line.startswith("<<<", i):
            heredocs.append(_delimiter(line, i + 2))
            i += 2
        elif top == ")" and c == "\n" and heredocs:
            i = _skip_heredocs(line, i + 1, heredocs)
            heredocs = []
        else:
            if c == "`":
                stack.append("`")
            elif top == '"':
                if c == '"':
                    stack.pop()
                    if not stack:
                        pieces.append(line[start:i])
                        start = i + 1
            elif c == "'" or c == '"' or (c == "$" and line[i + 1:i + 2] == "'"):
                if not stack:
                    pieces.append(line[start:i])
                    start = i + 1 + (c == "$")
                stack.append("$'" if c == "$" else c)
                i += c == "$"
            elif top == ")" and c == "(":
                stack.append(")")
            elif c == top:
                stack.pop()
            i += 1
    i = min(i, n)
    if not pieces:
        return line[start:i], i
    pieces.append(line[start:i])  # an unclosed quote runs to the end, without its opening quote
    return "".join(pieces), i


def _delimiter(line: str, i: int) -> tuple[str, bool]:
    """A heredoc's closing word after `<<` at i, and whether tabs may precede it (`<<-`)."""
    tabs = line.startswith("-", i)
    i += tabs
    n = len(line)
    while i < n and line[i] in " \t":
        i += 1
    end = i
    while end < n and line[end] not in _WORD_END:
        end += 1
    return "".join(c for c in line[i:end] if c not in "'\"\\"), tabs


def _skip_heredocs(line: str, i: int, heredocs: list[tuple[str, bool]]) -> int:
    """Past the bodies of the heredocs opened on the line that just ended: stdin, not commands."""
    n = len(line)
    for delimiter, tabs in heredocs:
        while i < n:
            end = line.find("\n", i)
            end = n if end < 0 else end
            body_line = line[i:end]
            i = end + 1
            if (body_line.lstrip("\t") if tabs else body_line) == delimiter:
                break
    return min(i, n)


def _command(parts: list[Token], op: str) -> Command:
    """The command without what sits in front of the program: assignments, shell keywords,
    wrappers and runners with their options."""
    if parts[0].kind == WORD:  # the common case, decided at once: a program with nothing in front
        name = parts[0].text.rpartition("/")[2]
        if name not in _FRONT and not name.startswith("python") and "=" not in parts[0].text:
            return Command(parts, op, name in SETUP)
    words = [k for k, t in enumerate(parts) if t.kind == WORD]
    first = 0  # index into words of the program
    assigned = False
    while first < len(words):
        word = parts[words[first]].text
        name = word.rpartition("/")[2]
        if "=" not in word and name not in _FRONT and word not in _FRONT and not name.startswith("python"):
            break  # the program
        if _is_assignment(word):
            first, assigned = first + 1, True
        elif word in _KEYWORDS:
            first += 1
        elif word in _HEADERS or (word in _CLOSERS and first == len(words) - 1):
            return Command([], op, True)
        elif name in WRAPPERS and not (name == "command" and _next(parts, words, first) in ("-v", "-V")):
            first = _past_options(parts, words, first + 1, WRAPPERS[name], assignments=name in ("env", "sudo"))
            if name == "timeout" and first < len(words):
                first += 1  # the duration
        elif name in RUNNERS and _next(parts, words, first) == RUNNERS[name]:
            first = _past_options(parts, words, first + 2, RUNNER_OPTIONS)
        elif name in LAUNCHERS:
            first = _past_options(parts, words, first + 1, RUNNER_OPTIONS)
        elif _is_python(name) and (module := _python_module(parts, words, first)) is not None:
            first = module
        else:
            break
    if first >= len(words):
        return Command([t for t in parts if t.kind == REDIRECT], op, assigned or not parts)
    kept = parts if first == 0 else [t for k, t in enumerate(parts) if t.kind == REDIRECT or k >= words[first]]
    program = parts[words[first]].text.rpartition("/")[2]
    if program in GLOBAL_OPTIONS:
        after = _past_options(parts, words, first + 1, GLOBAL_OPTIONS[program])
        dropped = {words[k] for k in range(first + 1, after)}
        kept = [t for k, t in enumerate(parts) if (t.kind == REDIRECT or k >= words[first]) and k not in dropped]
    return Command(kept, op, program in SETUP)


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.removesuffix("+").isidentifier()


def _is_python(name: str) -> bool:
    version = name[6:] if name.startswith("python") else "x"
    return all(c.isdigit() or c == "." for c in version) and version.isascii()


def _next(parts: list[Token], words: list[int], k: int) -> str:
    return parts[words[k + 1]].text if k + 1 < len(words) else ""


def _past_options(parts: list[Token], words: list[int], k: int, with_value: frozenset[str], assignments: bool = False) -> int:
    """The index (into words) of the first word after options (and, for env and sudo, assignments)."""
    while k < len(words):
        word = parts[words[k]].text
        if word == "--":
            return k + 1
        if word in with_value:
            k += 2
        elif word.startswith("-") and len(word) > 1 or (assignments and _is_assignment(word)):
            k += 1
        else:
            break
    return k


def _python_module(parts: list[Token], words: list[int], k: int) -> int | None:
    """For `python [options] -m module ...`, the index of the module; None when python runs a
    script or `-c` code (then python is the program)."""
    k += 1
    while k < len(words):
        word = parts[words[k]].text
        if word == "-m":
            return k + 1 if k + 1 < len(words) else None
        if word in PYTHON_OPTIONS:
            k += 2
        elif word.startswith("-") and word != "-" and not word.startswith("-c"):
            k += 1
        else:
            return None
    return None
