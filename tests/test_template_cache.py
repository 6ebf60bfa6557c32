"""The emitter's compiled Jinja templates in the disk cache (runtime/template_cache.py): a new environment loads
them without compiling, a damaged entry is compiled again and rewritten, never loaded."""
import jinja2

from transpiler.emit_cuda.emitter import templates_dir
from transpiler.runtime import cache
from transpiler.runtime.template_cache import install


def _environment(compiled):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    real = env.compile

    def counting(source, name=None, filename=None, raw=False, defer_init=False):
        compiled.append(name)
        return real(source, name, filename, raw, defer_init)
    env.compile = counting
    install(env)
    return env


def test_compiled_templates_are_reused_and_damaged_ones_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))
    compiled = []
    first = _environment(compiled).get_template("ops.j2").module
    assert compiled == ["ops.j2"]
    (entry,) = (cache.cache_dir() / "templates").iterdir()
    again = []
    second = _environment(again).get_template("ops.j2").module
    assert again == []                                   # loaded from the cache, not compiled
    assert sorted(n for n in dir(first) if not n.startswith("_")) == \
        sorted(n for n in dir(second) if not n.startswith("_"))
    entry.write_bytes(entry.read_bytes()[:-7])           # truncated: its digest no longer matches
    damaged = []
    _environment(damaged).get_template("ops.j2")
    assert damaged == ["ops.j2"] and cache.read(entry) is not None     # compiled again and rewritten


def test_a_template_edited_after_caching_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "t.j2").write_text("{{ 1 + 1 }}")

    def env_for(compiled):
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)))
        real = env.compile
        env.compile = lambda source, *a, **k: compiled.append(1) or real(source, *a, **k)
        install(env)
        return env
    assert env_for([]).get_template("t.j2").render() == "2"
    (folder / "t.j2").write_text("{{ 2 + 2 }}")
    compiled = []
    assert env_for(compiled).get_template("t.j2").render() == "4" and compiled == [1]


def _environment_with_installation(compiled, installation):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    real = env.compile
    env.compile = lambda source, name=None, *a, **k: compiled.append(name) or real(source, name, *a, **k)
    install(env, installation)
    return env


def test_templates_compiled_into_the_installation_serve_an_empty_cache_folder(tmp_path, monkeypatch):
    installation = tmp_path / "installation"
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "first"))
    compiled = []
    _environment_with_installation(compiled, installation).get_template("dot.j2")
    assert compiled == ["dot.j2"] and len(list(installation.iterdir())) == 1
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "empty"))   # a cold cache folder
    again = []
    assert _environment_with_installation(again, installation).get_template("dot.j2").module is not None
    assert again == []
    (entry,) = installation.iterdir()
    entry.write_bytes(entry.read_bytes()[:-5])                               # damaged: compiled again
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "empty2"))
    damaged = []
    _environment_with_installation(damaged, installation).get_template("dot.j2")
    assert damaged == ["dot.j2"] and cache.unseal(entry.name, entry.read_bytes()) is not None


def test_an_installation_folder_that_cannot_be_written_is_skipped_quietly(tmp_path, monkeypatch, recwarn):
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    compiled = []
    assert _environment_with_installation(compiled, blocked / "sub").get_template("ops.j2").module is not None
    assert compiled == ["ops.j2"] and not [w for w in recwarn if "cache" in str(w.message)]


def test_prime_compiles_every_template_of_the_emitter(tmp_path, monkeypatch):
    from transpiler.runtime import template_cache
    monkeypatch.setenv("TRANSPILER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(template_cache, "installation_folder", lambda: tmp_path / "installation")
    from transpiler.emit_cuda import emitter
    monkeypatch.setattr(emitter, "_env", None)          # a fresh environment, so nothing is compiled yet
    count = template_cache.prime()
    names = {p.name for p in templates_dir().glob("*.j2")}
    assert count == len(names) >= 5 and len(list((tmp_path / "installation").iterdir())) == count
