"""Only for cffi_modules: cffi cannot be configured from pyproject.toml yet."""
from setuptools import setup

setup(cffi_modules=["gdevd/gpu/_build_core.py:ffibuilder"])
