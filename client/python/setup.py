"""Wheel metadata of ps_client; run by build_wheel.sh on a staged copy of
the package that already holds the extension built by Bazel (nothing is
compiled here). See README.md "Python client"."""

from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    """The package ships a compiled module: tag the wheel cp311-linux."""

    def has_ext_modules(self):
        return True


setup(
    name="ps_client",
    version="0.1.0",
    description="Python client of the ps parameter-server cluster",
    packages=["ps_client", "ps_client.nn"],
    package_data={"ps_client": ["_core.so", "_core.pyi", "py.typed",
                                "BUILD_ID"]},
    python_requires="==3.11.*",
    install_requires=["numpy"],
    extras_require={"torch": ["torch"]},
    distclass=BinaryDistribution,
    zip_safe=False,
)
