#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Cut the overlay into the patch series described by series/series.conf.

Writes commits on the branch 'series' of the base tree (without touching its
work tree: a private index is used) and 'git format-patch' files with a cover
letter into build/series-7.3/.  With --build, checks out each commit in a
separate work tree and builds it, so that every patch is shown to build.

The overlay's content is the sum of the series: the last commit's tree is
checked to be identical to what 'overlay.py apply' writes.  Every commit is
authored and signed off by identity(): MTJOB_IDENTITY or git config user.*.
"""

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
# The overlay and its series/: --overlay, or the
# Makefile's OVERLAY.
OVERLAY = os.environ.get("OVERLAY", REPO)
import overlay  # noqa: E402


def die(msg):
    sys.stderr.write(f"series: {msg}\n")
    sys.exit(1)


class Patch:
    def __init__(self, title):
        self.title = title
        self.files = []
        self.claims = []        # (path, start, end regex or None, once)
        self.interims = []      # (path, compiled regex, replacement)
        self.body = []


# Options a series.conf may set before its first [patch] ("option: NAME").
OPTIONS = set()
# The claims and interims that took a line: (patch index, path, regex).  One
# that took none is stale (its regex no longer matches the code) and fails
# the series, before a patch that lacks the line fails to build.
USED = set()


def parse_conf(path):
    patches = []
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("#") and not patches:
                continue
            if line.startswith("option:") and not patches:
                OPTIONS.add(line[len("option:"):].strip())
                continue
            if line.startswith("[patch] "):
                patches.append(Patch(line[len("[patch] "):].strip()))
            elif not patches:
                if line.strip():
                    die(f"{path}: text before the first [patch]: {line}")
            elif line.startswith("files:"):
                patches[-1].files += line[len("files:"):].split()
            elif line.startswith(("claim:", "claim-once:")):
                once = line.startswith("claim-once:")
                fpath, _, rx = line.partition(":")[2].strip().partition(" ")
                start, sep, end = rx.partition(" ... ")
                if once and not sep:
                    die(f"{path}: claim-once needs 'FILE START ... END': "
                        f"{line}")
                patches[-1].claims.append(
                    (fpath, re.compile(start.strip()),
                     re.compile(end.strip()) if sep else None, once))
            elif line.startswith("interim:"):
                fpath, _, rest = line[len("interim:"):].strip().partition(" ")
                rx, sep, repl = rest.partition(" => ")
                if not sep:
                    die(f"{path}: interim needs 'FILE REGEX => TEXT': {line}")
                patches[-1].interims.append((fpath, re.compile(rx.strip()),
                                             repl.strip()))
            else:
                patches[-1].body.append(line)
    for p in patches:
        p.body = "\n".join(p.body).strip()
    return patches


def owners(patches, paths):
    """Map every overlay path to the index of the patch that lists it."""
    own = {}
    for i, p in enumerate(patches):
        for f in p.files:
            if f in own:
                die(f"{f} is listed by two patches")
            own[f] = i
    missing = sorted(set(paths) - set(own))
    if missing:
        die(f"not in any patch of series.conf: {' '.join(missing)}")
    extra = sorted(set(own) - set(paths))
    if extra:
        die(f"series.conf lists files the overlay lacks: {' '.join(extra)}")
    return own


def assign_added(patches, path, owner, lines, before=None, taken=None):
    """Patch index of each line of one run of added LINES of PATH.

    A claim takes the lines from one matching its start regex to the end of
    the run, or, if it has an end regex, to the first line matching that,
    after which the lines go back to whoever had them before.  A claimed
    block with an end regex that starts after a blank line takes the blank
    line after it too, so that the patches before it keep one blank line
    between the blocks around it, not two.  BEFORE is the line before the
    run (None at the start of the file).  TAKEN: the claim-once claims
    that took their block in the file's earlier runs (updated).
    """
    claims = [(i, start, end, once) for i, p in enumerate(patches)
              for f, start, end, once in p.claims if f == path]
    out, cur, back, until, tail = [], owner, None, None, None
    taken = set() if taken is None else taken
    after_blank, prev = False, before
    for line in lines:
        if tail is not None:
            done, tail = tail, None
            if line.strip() == "":
                out.append(done)
                prev = line
                continue
        for i, start, end, once in claims:
            # claim-once: the first block only, where its start matches
            # a later block's line too ("/**" of the next function).
            if until is None and start.search(line) and not (
                    once and (i, start.pattern) in taken):
                USED.add((i, path, start.pattern))
                taken.add((i, start.pattern))
                if end is not None:
                    back, until = cur, end
                    after_blank = prev is not None and prev.strip() == ""
                cur = i
        out.append(cur)
        if until is not None and until.search(line):
            if after_blank:
                tail = cur
            cur, back, until = back, None, None
        prev = line
    return out


def interim_of(patches, path, line, k):
    """(i, text): the first patch before K whose interim for PATH matches
    LINE, and the line as that patch carries it; None if none does."""
    for i, p in enumerate(patches[:k]):
        for ipath, rx, repl in p.interims:
            if ipath == path and rx.search(line):
                USED.add((i, path, rx.pattern))
                return i, rx.sub(repl, line)
    return None


def trivial_to_next(added, ks, owner):
    """KS (the patch of each line of ADDED) with each run of brace or blank
    lines of OWNER that sits between lines of two other patches given to
    the later block.  For an op where OWNER adds nothing but such lines:
    the matcher anchored the "}" that closes the earlier block on a later
    "}", and the run between is that later block's start ("}", "", body),
    which the owner must not carry alone.  A run at the op's start or end,
    or of one of its neighbours' patches (a claim's own closing lines),
    keeps its patch."""
    ks = list(ks)
    i = 0
    while i < len(added):
        if not TRIVIAL(added[i]):
            i += 1
            continue
        j = i
        while j < len(added) and TRIVIAL(added[j]):
            j += 1
        if 0 < i and j < len(added) and ks[i - 1] != ks[j] and \
                ks[i] == owner and owner not in (ks[i - 1], ks[j]):
            for t in range(i, j):
                ks[t] = ks[j]
        i = j
    return ks


def TRIVIAL(line):
    """Lines that must not anchor a match (see stage_contents())."""
    return line.strip() in ("", "{", "}", "})", "};", "},", ")", ");")


def slide_inserts(ops, f):
    """Move each pure insertion down while its first line equals the line
    after it (as git's diff slides them), so that a block added after a
    function starts with its own first line, not with the closing lines of
    the function before it."""
    ops = [list(o) for o in ops]
    for k, o in enumerate(ops):
        if o[0] != "insert" or k + 1 >= len(ops) or ops[k + 1][0] != "equal":
            continue
        nxt = ops[k + 1]
        prev = ops[k - 1] if k > 0 and ops[k - 1][0] == "equal" else None
        while nxt[3] < nxt[4] and f[o[3]] == f[nxt[3]]:
            if prev is None:
                prev = ["equal", o[1], o[1], o[3], o[3]]
                ops.insert(k, prev)
                k += 1
            prev[2] += 1
            prev[4] += 1
            o[1] += 1
            o[2] += 1
            o[3] += 1
            o[4] += 1
            nxt[1] += 1
            nxt[3] += 1
    return [tuple(o) for o in ops if o[0] != "equal" or o[1] < o[2]]


def stage_contents(patches, tree, path, owner, final, base):
    """Content of PATH after each patch: a list, None where it is absent."""
    n = len(patches)
    claimed = any(f == path for p in patches for f, *_ in p.claims)
    if base is None and not claimed:
        return [final if k >= owner else None for k in range(n)]
    # A new file whose lines other patches claim: diff it against nothing.
    b = base.decode().splitlines(keepends=True) if base is not None else []
    f = final.decode().splitlines(keepends=True)
    pieces = []     # (lines, first and last stage that have them)
    # With "option: braces-do-not-anchor", lines of only braces or blanks
    # anchor no match (they may still extend one): otherwise a block a patch
    # adds after a function that ends like it (enqueue_on_node() after
    # enqueue()) may be matched by its closing lines, and an earlier patch
    # gets them.
    sm = difflib.SequenceMatcher(
        TRIVIAL if "braces-do-not-anchor" in OPTIONS else None, b, f,
        autojunk=False)
    ops = sm.get_opcodes()
    if "braces-do-not-anchor" in OPTIONS:
        ops = slide_inserts(ops, f)
    taken = set()   # the claim-once claims that took their block
    for op, i1, i2, j1, j2 in ops:
        if op == "equal":
            pieces.append((b[i1:i2], 0, n - 1))
            continue
        added = f[j1:j2]
        before = f[j1 - 1] if j1 > 0 else None
        ks = assign_added(patches, path, owner, added, before, taken)
        # An earlier patch may carry a line in an interim form, which the
        # line's own patch then replaces: (interim patch, its text) or None.
        interim = [interim_of(patches, path, line, k)
                   for line, k in zip(added, ks)]
        real = [k if im is None else im[0]
                for line, k, im in zip(added, ks, interim)
                if not TRIVIAL(line)]
        # Removed lines go with the file's owner, or, where the owner adds
        # nothing of its own in their place (only braces or blanks), with
        # the first patch that does: the lines that replace them.  The
        # owner's braces and blanks there are the matcher's pairing, not
        # the owner's: a run of them between two other patches' blocks
        # opens the later block, the others go with the replacement.
        gone = owner if op == "delete" or not real or owner in real \
            else min(real)
        if gone != owner:
            ks = trivial_to_next(added, ks, owner)
            ks = [gone if k == owner else k for k in ks]
            interim = [interim_of(patches, path, line, k)
                       for line, k in zip(added, ks)]
        pieces.append((b[i1:i2], 0, gone - 1))
        for line, k, im in zip(added, ks, interim):
            if im is not None:
                pieces.append(([im[1]], im[0], k - 1))
            pieces.append(([line], k, n - 1))
    return ["".join("".join(lines) for lines, lo, hi in pieces
                    if lo <= k <= hi).encode()
            if base is not None or k >= owner else None for k in range(n)]


def git(tree, *args, env=None, inp=None):
    res = subprocess.run(["git", "-C", tree, *args], capture_output=True,
                         env=env, input=inp)
    if res.returncode:
        die(f"git {' '.join(args)}: {res.stderr.decode().strip()}")
    return res.stdout.decode().strip()


IDENTITY_RE = re.compile(r"^([^<>]+?)\s*<([^<>@\s]+@[^<>\s]+)>$")


def identity():
    """The series' author and Signed-off-by, as (name, email):
    $MTJOB_IDENTITY ("Name <email>"), else git config user.name and
    user.email (of the overlay repository, then global), else the author of
    the overlay repository's HEAD commit (a clean clone without git config)."""
    env = os.environ.get("MTJOB_IDENTITY", "").strip()
    if env:
        m = IDENTITY_RE.match(env)
        if not m:
            die(f"MTJOB_IDENTITY={env!r}: write it as 'Name <email>'")
        return m.group(1), m.group(2)

    def config(key):
        res = subprocess.run(["git", "-C", OVERLAY, "config", key],
                             capture_output=True, text=True)
        return res.stdout.strip() if res.returncode == 0 else ""
    name, email = config("user.name"), config("user.email")
    if name and email:
        return name, email
    name, email = git(OVERLAY, "log", "-1", "--format=%an%n%ae").split("\n")
    if not name or "@" not in email:
        die("no identity for the series' Signed-off-by: set git config "
            "user.name and user.email, or MTJOB_IDENTITY='Name <email>'")
    return name, email


def build_series(tree, patches, parts):
    """Commit the series on the branch 'series' of TREE and write the PARTS
    of it, each (OUTDIR, FIRST, LAST, COVER): patches FIRST..LAST (numbers
    of the whole series), a series of its own numbered from 1, into OUTDIR
    with the cover letter COVER (series/cover-letter.txt if None), and
    with FIRST > 1 format-patch's base-commit (7.3) and a
    prerequisite-patch-id for each patch before FIRST, as b4 writes a
    series that depends on another.  A patch's changelog names patches of
    its own part."""
    paths = {rel: src for rel, src, _ in overlay.overlay_files(OVERLAY)}
    own = owners(patches, paths)
    stages = {}
    for rel in paths:
        with open(os.path.join(tree, rel), "rb") as fh:
            final = fh.read()
        base = overlay.base_content(tree, rel)
        stages[rel] = stage_contents(patches, tree, rel, own[rel], final, base)
    stale = [f"'{p.title}': {f}: '{rx.pattern}'"
             for k, p in enumerate(patches)
             for f, rx in ([(f, start) for f, start, *_ in p.claims] +
                           [(f, rx) for f, rx, _ in p.interims])
             if (k, f, rx.pattern) not in USED]
    if stale:
        die("claims or interims that take no line (their regex no longer "
            "matches):\n  " + "\n  ".join(stale))

    index = os.path.join(tree, ".git", "series-index")
    name, email = identity()
    env = dict(os.environ, GIT_INDEX_FILE=index, GIT_AUTHOR_NAME=name,
               GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name,
               GIT_COMMITTER_EMAIL=email,
               GIT_AUTHOR_DATE="2026-11-21T00:00:00Z",
               GIT_COMMITTER_DATE="2026-11-21T00:00:00Z")
    titles = [p.title for p in patches]
    # A changelog names patches of its own series: its numbers count from
    # that series' first patch, and one outside it fails.
    for k, p in enumerate(patches, 1):
        first, last = next(((f, t) for _, f, t, _ in parts if f <= k <= t),
                           (1, len(patches)))
        p.body = resolve_cover(p.body, titles[first - 1:last], None, None,
                               {}, f"changelog of '{p.title}'", first - 1)
    git(tree, "read-tree", "base", env=env)
    parent = git(tree, "rev-parse", "base")
    # One update-index a patch, of the files whose content it changes:
    # every git call that writes the index rewrites all of 7.3's (about
    # 90 000 entries), which once a file and a patch took minutes.
    shas, written = {}, {}
    # Each file's mode: upstream's, or for a file the series adds, the
    # tree's (an executable script stays executable).
    modes = {ln.split("\t", 1)[1]: ln.split()[0] for ln in git(
        tree, "ls-tree", "-r", "base", "--", *sorted(paths)).split("\n")
        if ln}
    for rel in paths:
        modes.setdefault(rel, "100755" if os.access(
            os.path.join(tree, rel), os.X_OK) else "100644")
    for k, p in enumerate(patches):
        entries = []
        for rel in sorted(paths):
            content = stages[rel][k]
            if content is None or written.get(rel) == content:
                continue
            if content not in shas:
                shas[content] = git(tree, "hash-object", "-w", "--stdin",
                                    inp=content)
            written[rel] = content
            entries.append(f"{modes[rel]} {shas[content]}\t{rel}\n")
        if entries:
            git(tree, "update-index", "--add", "--index-info", env=env,
                inp="".join(entries).encode())
        t = git(tree, "write-tree", env=env)
        msg = (f"{p.title}\n\n{p.body}\n\n"
               f"Signed-off-by: {name} <{email}>\n")
        parent = git(tree, "commit-tree", t, "-p", parent, "-m", msg, env=env)
    os.unlink(index)
    git(tree, "update-ref", "refs/heads/series", parent)
    # The last commit must hold exactly the overlay.
    rels = sorted(paths)
    held = dict(ln.split("\t", 1)[::-1] for ln in git(
        tree, "ls-tree", "-r", "--format=%(objectmode) %(objectname)\t%(path)",
        "series", "--", *rels).split("\n") if ln)
    have = git(tree, "hash-object", "--", *[os.path.join(tree, r)
                                            for r in rels]).split("\n")
    for rel, sha in zip(rels, have):
        if held.get(rel) != f"{modes[rel]} {sha}":
            die(f"the series does not add up to the overlay: {rel} differs "
                "(run 'make apply' first?)")
    commits = git(tree, "rev-list", "--reverse", "base..series").split()
    # The cover letters are resolved before the old series are removed: a
    # reference that no longer resolves leaves no half-written series.
    texts = []
    for outdir, first, last, cover in parts:
        if cover and not os.path.exists(cover):
            die(f"cover letter {cover}: no such file")
        cover = cover or os.path.join(OVERLAY, "series", "cover-letter.txt")
        text = None
        if os.path.exists(cover):
            def added(k, fpath, first=first):
                return [ln[1:] for ln in git(
                    tree, "show", "--format=", "-U0", commits[first - 1 + k],
                    "--", fpath).split("\n")
                    if ln.startswith("+") and
                    not re.match(r"\+\+\+ (b/|/dev/null)", ln)]
            with open(cover) as f:
                text = f.read()
            text = resolve_cover(text, titles[first - 1:last], added,
                                 lambda rel: read_final(tree, rel),
                                 read_facts(), f"cover letter {cover}")
        texts.append(text)
    for (outdir, first, last, _), text in zip(parts, texts):
        write_part(tree, len(patches), outdir, first, last, text)


def write_part(tree, n, outdir, first, last, text):
    """format-patch patches FIRST..LAST of the N of the branch 'series' into
    OUTDIR, with the cover letter TEXT (None: format-patch's blurb)."""
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    start = "base" if first == 1 else f"series~{n - first + 1}"
    git(tree, "format-patch", "-q", "--cover-letter", "--subject-prefix",
        "RFC PATCH", "-o", outdir, "--base", "base",
        f"{start}..series~{n - last}")
    if text is not None:
        fill_cover(outdir, text)
    print(f"series: {last - first + 1} patches in {outdir}"
          + (f" (patches {first}-{last} of {n})"
             if (first, last) != (1, n) else ""))


# The cover letter and the changelogs name no patch by number and the cover
# letter states no fact of the code by hand: series/cover-letter.txt says
# {patch:TITLE} (the one patch whose title contains TITLE), {patch+FILE:REGEX}
# (the first patch that adds a line of FILE matching REGEX; neither may hold
# a brace) and {fact:NAME} (series/cover-facts.conf: NAME FILE REGEX, the
# group of REGEX's one match in FILE, or with 'count:REGEX' how many times it
# matches; FILE of the final tree, or of the repository under TOOLING), and
# series.py writes the numbers in; a changelog in series.conf says
# {patch:TITLE}.  A patch number written out, a title that matches no patch
# or several, a line no patch adds or a fact the code no longer states fails
# the series.
REF = re.compile(r"\{(patch:|patch\+|fact:)([^{}]+)\}")
# "patch 3", "patches\n3-5", and a number joined to a reference: "{...} and 3".
LITERAL = re.compile(r"\bpatch(?:es)?\s+\d|\x00\s*(?:,|-|and|or|to)\s*\d",
                     re.I)
TOOLING = ("scripts/", "tests/", "series/", "doc/")


def read_final(tree, rel):
    """A file of the final TREE, or of the repository if under TOOLING."""
    base = OVERLAY if rel.startswith(TOOLING) else tree
    with open(os.path.join(base, rel)) as f:
        return f.read()


def read_facts():
    """{NAME: (FILE, REGEX)} of series/cover-facts.conf (whole-line comments
    only: REGEX is the rest of the line)."""
    path = os.path.join(OVERLAY, "series", "cover-facts.conf")
    facts = {}
    if not os.path.exists(path):
        return facts
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3:
                die(f"{path}:{n}: not 'NAME FILE REGEX': {line.strip()}")
            if parts[0] in facts:
                die(f"{path}:{n}: {parts[0]} defined twice")
            facts[parts[0]] = (parts[1], parts[2].strip())
    return facts


def resolve_cover(text, titles, added, read, facts, what="cover letter",
                  off=0):
    """Write patch numbers and facts into TEXT (the cover letter, or with
    ADDED None, READ None and FACTS {} a changelog: {patch:TITLE} only).

    TITLES are the titles of the patches TEXT may name, in order (those of
    its own series), ADDED(k, FILE) the lines the k-th of them (from 0)
    adds to FILE, READ(FILE) a file of the final tree, FACTS {NAME: (FILE,
    REGEX)}.  OFF: only for the wording of an error, the whole series'
    number of the patch before TITLES[0].
    """
    bare = REF.sub("\x00", text)
    m = LITERAL.search(bare)
    if m:
        n = bare[:m.start()].count("\n") + 1
        die(f"{what} line {n}: '{m.group(0).replace(chr(0), '{...}')}' is a "
            "patch number written by hand: say {patch:TITLE} or "
            "{patch+FILE:REGEX}")

    def one(m):
        kind, arg = m.group(1), m.group(2)
        if kind == "patch:":
            hits = [k for k, t in enumerate(titles) if arg in t]
            if len(hits) != 1:
                die(f"{what}: {{patch:{arg}}} matches {len(hits)} "
                    "patch titles, not one"
                    + f" of patches {off + 1}-{off + len(titles)}, its "
                    "own series")
            return str(hits[0] + 1)
        if added is None:
            die(f"{what}: {{{kind}{arg}}}: a changelog says {{patch:TITLE}} "
                "only")
        if kind == "patch+":
            fpath, sep, rx = arg.partition(":")
            if not sep:
                die(f"{what}: {{patch+{arg}}} is not FILE:REGEX")
            for k in range(len(titles)):
                if any(re.search(rx, ln) for ln in added(k, fpath)):
                    return str(k + 1)
            die(f"{what}: no patch adds a line of {fpath} matching '{rx}'")
        if arg not in facts:
            die(f"{what}: {{fact:{arg}}} is not in cover-facts.conf")
        fpath, rx = facts[arg]
        if rx.startswith("count:"):
            n = len(re.findall(rx[len("count:"):], read(fpath), re.M))
            if not n:
                die(f"{what}: fact {arg}: '{rx}' no longer matches {fpath}")
            return str(n)
        found = list(re.finditer(rx, read(fpath), re.M))
        if len(found) != 1 or found[0].re.groups != 1:
            die(f"{what}: fact {arg}: '{rx}' must match {fpath} once, with "
                f"one group (matches {len(found)} times)")
        return found[0].group(1)
    return REF.sub(one, text)


def fill_cover(outdir, text):
    """Put the cover letter TEXT into format-patch's cover letter."""
    path = [os.path.join(outdir, f) for f in sorted(os.listdir(outdir))
            if f.startswith("0000-")][0]
    title, _, body = text.partition("\n")
    with open(path) as f:
        text = f.read()
    text = text.replace("*** SUBJECT HERE ***", title.strip())
    text = text.replace("*** BLURB HERE ***", body.strip())
    with open(path, "w") as f:
        f.write(text)


def build_end(n, first, last, skip_last):
    """The last patch build_each() builds of a series of N: LAST if given,
    else N, less the overlay with SKIP_LAST; at least FIRST."""
    end = n - 1 if skip_last else n
    if last is not None:
        if last > n:
            die(f"--last {last}: the series has {n} patches")
        end = min(end, last)
    if first > end:
        die(f"--first {first}: no patch to build up to {end}")
    return end


def werror(config):
    """CONFIG with CONFIG_WERROR=y."""
    lines = [ln for ln in config.splitlines()
             if not re.match(r"(# )?CONFIG_WERROR[= ]", ln)]
    return "\n".join(lines + ["CONFIG_WERROR=y"]) + "\n"


W1_WARNING = re.compile(r"^(\S+?\.[ch]):(\d+):\d+: warning: (.*)$", re.M)


def added_lines(wt, commit, path):
    """The line numbers of PATH at COMMIT that the series added (base..)."""
    out = git(wt, "diff", "-U0", "base", commit, "--", path)
    lines = set()
    for m in re.finditer(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", out, re.M):
        start, n = int(m.group(1)), int(m.group(2) or 1)
        lines.update(range(start, start + n))
    return lines


def w1_warnings(wt, kbuild, make, commit):
    """Rebuilds the objects of the C files COMMIT touches with W=1 (as a
    warning, not an error) and returns the warnings at lines the series
    added up to COMMIT: the new ones.  Upstream's own W=1 warnings in a
    file the series patches are not the series'."""
    files = [f for f in git(wt, "diff", "--name-only", f"{commit}^",
                            commit).split() if f.endswith(".c")]
    objs = [f[:-2] + ".o" for f in files
            if os.path.exists(os.path.join(kbuild, f[:-2] + ".o"))]
    if not objs:
        return []
    res = subprocess.run(make + ["W=1", "KCFLAGS=-Wno-error"] + objs,
                         capture_output=True, text=True)
    found = []
    added = {}
    for m in W1_WARNING.finditer(res.stdout + res.stderr):
        path = os.path.relpath(os.path.realpath(os.path.join(kbuild, m[1])),
                               os.path.realpath(wt))
        if path.startswith(".."):
            continue
        if path not in added:
            added[path] = added_lines(wt, commit, path)
        if int(m[2]) in added[path]:
            found.append(f"{path}:{m[2]}: {m[3]}")
    if res.returncode and not found:
        sys.stdout.write(res.stdout[-3000:] + res.stderr[-3000:])
        die(f"{commit[:12]}: the W=1 build of {' '.join(objs)} failed")
    return sorted(set(found))


def build_each(tree, kbuild, patches, llvm, config, skip_last=False,
               first=1, last=None):
    """Build every commit of the series in a separate work tree.

    Each build starts from CONFIG (the full series' .config) with
    CONFIG_WERROR=y, through olddefconfig, so that a symbol a later patch
    adds is not lost because an earlier patch did not know it yet.  With SKIP_LAST the last commit, whose
    tree is the overlay (checked by build_series()), is not built again: the
    caller built the overlay with CONFIG.  Patches before FIRST are not
    built (an earlier run built them; the build directory holds the last),
    nor those after LAST.
    """
    with open(config) as f:
        full = f.read()
    os.makedirs(kbuild, exist_ok=True)
    wt = tree.rstrip("/") + "-series-tree"
    if not os.path.isdir(wt):
        git(tree, "worktree", "add", "-f", "--detach", wt, "base")
    commits = git(tree, "rev-list", "--reverse", "base..series").split()
    end = build_end(len(commits), first, last, skip_last)
    if skip_last and end == len(commits) - 1:
        print(f"series: patch {len(commits)} is the overlay, built as "
              f"{os.path.dirname(config)}: not built again")
    for i, c in enumerate(commits[:end], 1):
        if i < first:
            continue
        git(wt, "checkout", "-q", "--detach", c)
        print(f"series: building {i}/{len(commits)}: "
              f"{git(wt, 'log', '-1', '--format=%s')}", flush=True)
        with open(os.path.join(kbuild, ".config"), "w") as f:
            f.write(werror(full))
        make = ["make", "-C", wt, f"O={kbuild}", f"LLVM={llvm}"]
        res = subprocess.run(make + ["olddefconfig"], capture_output=True,
                             text=True)
        if res.returncode == 0:
            # vmlinux: every object compiled and linked; the bzImage
            # around it only packs it.  CONFIG_WERROR: a warning of C
            # (-Werror) or Rust (-Dwarnings) fails the patch.
            res = subprocess.run(make + [f"-j{os.cpu_count() + 1}",
                                         "vmlinux"],
                                 capture_output=True, text=True)
        if res.returncode:
            sys.stdout.write(res.stdout[-3000:] + res.stderr[-3000:])
            die(f"patch {i} does not build (CONFIG_WERROR=y)")
        new = w1_warnings(wt, kbuild, make, c)
        if new:
            sys.stdout.write("\n".join(new) + "\n")
            die(f"patch {i}: {len(new)} W=1 warnings in lines the series "
                "adds")
    if first > 1 or (last is not None and last < len(commits)):
        print(f"series: patches {first}-{end} of {len(commits)} build")
    else:
        print(f"series: all {len(commits)} patches build")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--overlay", default=OVERLAY,
                    help="the overlay and its series/ (default: $OVERLAY or "
                    "the repository)")
    ap.add_argument("--tree", default=os.environ.get(
        "TREE", os.path.join(REPO, "build", "linux-7.3")))
    ap.add_argument("--out", default=os.environ.get(
        "SERIES_OUT", os.path.join(REPO, "build", "series-7.3")))
    ap.add_argument("--build", metavar="KBUILD",
                    help="build each patch in this build directory")
    ap.add_argument("--llvm", default=os.environ.get("LLVM", "-19"))
    ap.add_argument("--first", type=int, default=1, metavar="N",
                    help="with --build: start at patch N (an earlier run of "
                    "the same series built the ones before)")
    ap.add_argument("--last", type=int, metavar="N",
                    help="with --build: stop after patch N")
    ap.add_argument("--skip-last", action="store_true",
                    help="do not build the last patch (the overlay, which "
                    "the build directory of --config holds)")
    ap.add_argument("--config", default=os.path.join(os.environ.get(
        "KBUILD", os.path.join(REPO, "build", "kbuild-7.3")), ".config"),
                    help="the .config every patch is built with")
    ap.add_argument("--upto", metavar="TITLE",
                    help="write only the patches up to the one whose title "
                    "contains TITLE, a series of its own (with --cover)")
    ap.add_argument("--part", nargs=4, action="append", default=[],
                    metavar=("OUTDIR", "FROM", "UPTO", "COVER"),
                    help="write patches FROM..UPTO (titles; '' for the first "
                    "or the last) into OUTDIR, a series of its own, with the "
                    "cover letter COVER; repeated, one cut for all (instead "
                    "of --out, --from, --upto and --cover)")
    ap.add_argument("--from", dest="start", metavar="TITLE",
                    help="write only the patches from the one whose title "
                    "contains TITLE (with --upto, to that one), a series "
                    "of its own based on the patches before it")
    ap.add_argument("--cover", metavar="FILE",
                    help="the cover letter (default: series/cover-letter.txt)")
    args = ap.parse_args()
    if args.first < 1 or (args.first > 1 and not args.build):
        die("--first N needs --build and N >= 1")
    if args.last is not None and (args.last < args.first or not args.build):
        die("--last N needs --build and N >= --first")
    globals()["OVERLAY"] = os.path.abspath(args.overlay)
    patches = parse_conf(os.path.join(OVERLAY, "series", "series.conf"))
    def number(opt, title):
        found = [k for k, p in enumerate(patches, 1) if title in p.title]
        if len(found) != 1:
            die(f"{opt} '{title}': {len(found)} patches match")
        return found[0]
    specs = args.part or [(args.out, args.start or "", args.upto or "",
                           args.cover or "")]
    parts = []
    for outdir, start, upto, cover in specs:
        if args.part and not cover:
            die(f"--part {outdir}: a part needs its own cover letter")
        first = number("--from", start) if start else 1
        last = number("--upto", upto) if upto else len(patches)
        if last < first:
            die(f"--upto '{upto}' is patch {last}, before --from's {first}")
        parts.append((os.path.abspath(outdir), first, last,
                      os.path.abspath(cover) if cover else None))
    if (args.part or args.start or args.upto) and args.build:
        die("--part, --from and --upto write a part of the series; build it "
            "with --first and --last")
    if args.part:
        spans = sorted((f, t) for _, f, t, _ in parts)
        if any(b[0] <= a[1] for a, b in zip(spans, spans[1:])):
            die("--part: the parts overlap")
    build_series(os.path.abspath(args.tree), patches, parts)
    if args.build:
        build_each(os.path.abspath(args.tree), os.path.abspath(args.build),
                   patches, args.llvm, args.config, args.skip_last,
                   args.first, args.last)


if __name__ == "__main__":
    main()
