"""scripts/overlay.py: which untracked files of the tree sync takes."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
import overlay  # noqa: E402


class IgnoredBeside(unittest.TestCase):
    """A file its own directory's .gitignore ignores is not a new overlay
    file; one it takes back with '!' is."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.tree = self.tmp.name
        os.makedirs(os.path.join(self.tree, "sel", "mm"))
        with open(os.path.join(self.tree, "sel", "mm", ".gitignore"),
                  "w") as f:
            f.write("# a comment\n*\n!/**/\n!*.c\n!Makefile\nlocal.c\n")

    def tearDown(self):
        self.tmp.cleanup()

    def ignored(self, rel):
        return overlay.ignored_beside(self.tree, rel)

    def test_generated_files_are_ignored(self):
        self.assertTrue(self.ignored("sel/mm/local_config.mk"))
        self.assertTrue(self.ignored("sel/mm/local_config.h_gen"))

    def test_taken_back_files_are_not(self):
        self.assertFalse(self.ignored("sel/mm/parallel_teardown.c"))
        self.assertFalse(self.ignored("sel/mm/Makefile"))

    def test_the_last_matching_pattern_wins(self):
        self.assertTrue(self.ignored("sel/mm/local.c"))

    def test_no_gitignore_or_top_level_ignores_nothing(self):
        self.assertFalse(self.ignored("sel/new.c"))
        self.assertFalse(self.ignored("Makefile"))


if __name__ == "__main__":
    unittest.main()
