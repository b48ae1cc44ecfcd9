"""pytest plugin ``--fakegrad`` (placeholder; full implementation follows)."""


def pytest_addoption(parser):
    group = parser.getgroup("fakegrad")
    group.addoption("--fakegrad", action="store_true", default=False,
                    help="run every test under the fakegrad-lint runtime watcher")
