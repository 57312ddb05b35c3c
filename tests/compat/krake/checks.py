"""What the client scripts here share: one check, printed as it passes, ending the script at the
first that fails (the Rust test shows everything printed)."""
import sys


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}", flush=True)
        sys.exit(1)
    print(f"ok: {what}", flush=True)
