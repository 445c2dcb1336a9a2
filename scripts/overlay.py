#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Apply the repository's kernel overlay to a base tree, or bring edits back.

The repository mirrors kernel paths.  A file ``X`` under one of the overlay
roots is a new file at ``X`` in the tree; a file ``X.patch`` is a unified diff
against the upstream file ``X``.  The base tree is a git repository whose
``base`` branch holds the unmodified upstream source (``make base``), so
``git -C TREE diff base`` always shows exactly our change.

Commands:
  apply  write the overlay into TREE; files whose content is unchanged keep
         their mtime so that kbuild rebuilds incrementally, and files that
         left the overlay are restored to their base content.
  sync   copy edits made in TREE back: new files are copied, modified upstream
         files are re-diffed into ``X.patch``.
  diff   print the whole change as one diff against base (for checkpatch).
  files  list the tree paths the overlay adds or changes.
  rust-project
         write REPO/rust-project.json for rust-analyzer from the one that
         the kernel's 'make rust-analyzer' wrote in KBUILD, with the crate
         roots that the overlay holds whole at their overlay paths.
"""

import argparse
import fnmatch
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOTS = ("arch", "Documentation", "drivers", "fs", "include", "init", "kernel",
         "lib", "mm", "rust", "samples",
         "tools/testing/selftests/mm", "tools/testing/vma")
# Top-level files the overlay may patch.
TOP_FILES = ("MAINTAINERS",)
# The list of files the last 'apply' wrote, kept out of the work tree.
MANIFEST = os.path.join(".git", "mtjob-overlay")


def die(msg):
    sys.stderr.write(f"overlay: {msg}\n")
    sys.exit(1)


def git(tree, *args, check=True, text=True):
    res = subprocess.run(["git", "-C", tree, *args], capture_output=True,
                         text=text)
    if check and res.returncode:
        die(f"git {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def overlay_files(repo):
    """Yield (tree path, repo path, is_patch) for every overlay file."""
    for name in TOP_FILES:
        if os.path.exists(os.path.join(repo, name + ".patch")):
            yield name, os.path.join(repo, name + ".patch"), True
    for root in ROOTS:
        top = os.path.join(repo, root)
        if not os.path.isdir(top):
            continue
        for dirpath, _, names in os.walk(top):
            for name in sorted(names):
                src = os.path.join(dirpath, name)
                rel = os.path.relpath(src, repo)
                if rel.endswith(".patch"):
                    yield rel[:-len(".patch")], src, True
                else:
                    yield rel, src, False


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def read_manifest(tree):
    """Map tree path -> digest of the overlay file it was applied from."""
    man = os.path.join(tree, MANIFEST)
    out = {}
    if os.path.exists(man):
        with open(man) as f:
            for line in f:
                rel, _, sha = line.strip().partition(" ")
                if rel:
                    out[rel] = sha
    return out


def write_manifest(tree, entries):
    with open(os.path.join(tree, MANIFEST), "w") as f:
        f.write("".join(f"{rel} {sha}\n" for rel, sha in sorted(entries.items())))


def base_content(tree, rel):
    res = subprocess.run(["git", "-C", tree, "show", f"base:{rel}"],
                         capture_output=True)
    return res.stdout if res.returncode == 0 else None


def patched(tree, rel, patch):
    """Return the content of upstream REL with PATCH applied."""
    orig = base_content(tree, rel)
    if orig is None:
        die(f"{patch}: upstream file {rel} does not exist in the base tree")
    with tempfile.TemporaryDirectory() as tmp:
        dst = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(orig)
        res = subprocess.run(["git", "apply", "--whitespace=nowarn", patch],
                             cwd=tmp, capture_output=True, text=True)
        if res.returncode:
            die(f"{patch} does not apply to {rel}:\n{res.stderr}")
        with open(dst, "rb") as f:
            return f.read()


def write_if_changed(path, data, mode=None):
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)
    return True


def cmd_apply(repo, tree):
    if git(tree, "rev-parse", "--verify", "-q", "base", check=False) == "":
        die(f"{tree} has no 'base' branch; run 'make base' first")
    wanted = {}
    sources = {}
    for rel, src, is_patch in overlay_files(repo):
        sources[rel] = digest(src)
        if rel in wanted:
            die(f"{rel} is both a new file and a patch in the overlay")
        if is_patch:
            wanted[rel] = (patched(tree, rel, src), None)
        else:
            if base_content(tree, rel) is not None:
                die(f"{src} replaces upstream {rel} whole; make it {rel}.patch")
            with open(src, "rb") as f:
                wanted[rel] = (f.read(), os.stat(src).st_mode & 0o777)
    changed = 0
    for rel, (data, mode) in sorted(wanted.items()):
        changed += write_if_changed(os.path.join(tree, rel), data, mode)
    # Restore what left the overlay since the last apply.
    old = set(read_manifest(tree))
    for rel in sorted(old - set(wanted)):
        orig = base_content(tree, rel)
        path = os.path.join(tree, rel)
        if orig is None:
            if os.path.exists(path):
                os.unlink(path)
        else:
            write_if_changed(path, orig)
        changed += 1
    write_manifest(tree, sources)
    print(f"overlay: {len(wanted)} files in the overlay, {changed} written "
          f"to {tree}")


def in_overlay(rel):
    return rel in TOP_FILES or rel.startswith(tuple(r + "/" for r in ROOTS))


def changed_paths(tree):
    """Paths in TREE that differ from base: (modified upstream, new files)."""
    mod = git(tree, "diff", "--name-only", "base", "--").split()
    # Debian's top-level .gitignore ignores everything, so list untracked
    # files without the standard excludes, limited to the overlay roots (the
    # build directory is elsewhere: O=).
    new = git(tree, "ls-files", "--others", "--", *ROOTS).split()
    # A file the overlay already holds stays, whatever a .gitignore says.
    known = read_manifest(tree)
    new = [p for p in new if not p.endswith((".orig", ".rej", "~"))
           and (p in known or not ignored_beside(tree, p))]
    return mod, new


def ignored_beside(tree, rel):
    """True if the .gitignore in REL's own directory ignores it, by git's
    rules for a name without a slash (the last pattern that matches wins;
    '!' takes a name back): what a build writes into the source tree (the
    mm selftests' local_config.*), which Debian's top-level .gitignore
    would hide from git anyway."""
    path = os.path.join(tree, os.path.dirname(rel), ".gitignore")
    if not os.path.dirname(rel) or not os.path.exists(path):
        return False
    ignored = False
    with open(path) as f:
        for ln in f:
            pat = ln.strip()
            if not pat or pat.startswith("#"):
                continue
            neg = pat.startswith("!")
            pat = pat.lstrip("!").lstrip("/")
            if fnmatch.fnmatch(os.path.basename(rel), pat):
                ignored = not neg
    return ignored


def edited_in_repo(repo, tree, rel, src):
    """True if SRC changed in the repository since the last apply."""
    applied = read_manifest(tree).get(rel)
    if applied and os.path.exists(src) and digest(src) != applied:
        sys.stderr.write(f"overlay: {os.path.relpath(src, repo)} was edited "
                         "in the repository since the last apply; not "
                         "overwritten (run 'make apply' first)\n")
        return True
    return False


def cmd_sync(repo, tree):
    mod, new = changed_paths(tree)
    n = 0
    synced = {}
    for rel in mod:
        if not in_overlay(rel):
            die(f"{rel} is outside the overlay roots {ROOTS}")
        diff = git(tree, "diff", "base", "--", rel)
        src = os.path.join(repo, rel + ".patch")
        if edited_in_repo(repo, tree, rel, src):
            continue
        n += write_if_changed(src, diff.encode())
        synced[rel] = digest(src)
    for rel in new:
        if not in_overlay(rel):
            die(f"{rel} is outside the overlay roots {ROOTS}")
        src = os.path.join(repo, rel)
        if edited_in_repo(repo, tree, rel, src):
            continue
        with open(os.path.join(tree, rel), "rb") as f:
            n += write_if_changed(src, f.read())
        synced[rel] = digest(src)
    # A patch whose file is back to base is dropped.
    for rel, src, is_patch in overlay_files(repo):
        if is_patch and rel not in mod and not edited_in_repo(repo, tree,
                                                              rel, src):
            os.unlink(src)
            n += 1
    # What was synced is what the tree holds: record it as applied.
    write_manifest(tree, {**read_manifest(tree), **synced})
    print(f"overlay: {n} overlay files updated from {tree}")


def cmd_diff(repo, tree):
    mod, new = changed_paths(tree)
    git(tree, "add", "-f", "-N", "--", *new) if new else None
    # With a diffstat, as in a posted patch (checkpatch reads MAINTAINERS there).
    sys.stdout.write(git(tree, "diff", "--stat", "-p", "base", "--", *mod,
                         *new))
    if new:
        git(tree, "reset", "-q", "--", *new)


def cmd_files(repo, tree):
    for rel, _, _ in sorted(overlay_files(repo)):
        print(rel)


def cmd_rust_project(repo, tree, kbuild):
    """REPO/rust-project.json: KBUILD's, with the overlay's crate roots.

    rust-analyzer finds a crate's modules by their place beside its root
    file, and matches the file an editor opens by its path.  A crate whose
    root the overlay holds whole (a sample, kernel/mtjob_rust.rs) can be
    rooted at the overlay's copy, and 'kernel::' resolves there.  The
    kernel crate's modules (rust/kernel/...) hang off rust/kernel/lib.rs,
    which the overlay holds as a patch: they resolve only in TREE.  The
    kernel's script lists crate roots under samples/ and drivers/ only;
    the overlay's others (a Makefile beside them builds NAME.o) are added
    with the samples' dependencies.
    """
    src = os.path.join(kbuild, "rust-project.json")
    if not os.path.exists(src):
        die(f"{src} is missing; run the kernel's 'make rust-analyzer' first")
    with open(src) as f:
        project = json.load(f)
    # The kernel's script writes real paths.
    tree = os.path.realpath(tree)
    crates = project["crates"]
    index = {c["display_name"]: i for i, c in enumerate(crates)}
    roots = {c["root_module"]: c for c in crates}
    sample = next((c for c in crates
                   if c["root_module"].startswith(
                       os.path.join(tree, "samples") + "/")), None)
    moved = added = 0
    for rel, path, is_patch in sorted(overlay_files(repo)):
        if is_patch or not rel.endswith(".rs"):
            continue
        in_tree = os.path.join(tree, rel)
        crate = roots.get(in_tree)
        if crate is not None:
            crate["root_module"] = path
            moved += 1
            continue
        stem = os.path.basename(rel)[:-len(".rs")]
        built = False
        for kb in ("Makefile", "Kbuild"):
            try:
                with open(os.path.join(os.path.dirname(in_tree), kb)) as f:
                    built = built or f"{stem}.o" in f.read()
            except FileNotFoundError:
                pass
        if not built or sample is None or stem in index:
            continue
        crates.append({**sample, "display_name": stem, "root_module": path})
        index[stem] = len(crates) - 1
        added += 1
    out = os.path.join(repo, "rust-project.json")
    with open(out, "w") as f:
        json.dump(project, f, sort_keys=True, indent=4)
        f.write("\n")
    print(f"overlay: {out}: {len(crates)} crates, {moved} rooted in the "
          f"overlay, {added} added")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("command",
                    choices=("apply", "sync", "diff", "files", "rust-project"))
    ap.add_argument("--repo", default=os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--tree", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "build", "linux-7.3"))
    ap.add_argument("--kbuild", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "build", "kbuild-7.3"))
    args = ap.parse_args()
    repo, tree = os.path.abspath(args.repo), os.path.abspath(args.tree)
    if args.command == "rust-project":
        cmd_rust_project(repo, tree, os.path.abspath(args.kbuild))
        return
    {"apply": cmd_apply, "sync": cmd_sync, "diff": cmd_diff,
     "files": cmd_files}[args.command](repo, tree)


if __name__ == "__main__":
    main()
