"""``python -m dlsched``: the same command as the ``dlsched`` console script."""

from dlsched.cli import app

if __name__ == "__main__":
    app(prog_name="dlsched")
