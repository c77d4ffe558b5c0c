"""The CTR example's modules (its parent directory) on sys.path, as when
train_ctr.py runs as a script."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
