"""habitat-lab (installed from PyPI) as the judge of our PersONAL episode files.

habitat-lab imports the native modules ``habitat_sim``, ``magnum`` and ``corrade``
at package import time; they are conda-only builds. :func:`habitat_lab` puts
inert stand-ins for exactly those three (any attribute, any submodule) on the
import path, imports habitat-lab's real dataset code, and removes the stand-ins
and habitat's modules again afterwards, so later tests still see that
``habitat_sim`` is absent.

The PersONAL authors run habitat-lab with their ``habitat-utils/`` task file in
place of habitat's ``object_nav_task.py``: the episode class gains ``object_id``,
``floor_id``, ``description``, ``owner``, ``summary``, ``extracted_summary`` and
``query``, the goal class gains ``floor_id`` (and the same text fields), and a view
point's ``iou`` becomes optional. :func:`personal_task_classes` declares those
fields on habitat-lab's own attrs classes, and :func:`with_personal_fields` swaps
them into habitat-lab's ``ObjectNavDatasetV1`` the way their install does.
:func:`authors_filter` applies their dataset's per-episode goal filter.
"""
from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import types

NATIVE = ("habitat_sim", "magnum", "corrade")
PERSONAL_EPISODE_FIELDS = ("object_id", "floor_id", "description", "owner", "summary", "extracted_summary", "query")
PERSONAL_GOAL_FIELDS = ("floor_id", "description", "owner", "summary", "extracted_summary", "query")


class _Inert(types.ModuleType):
    """A module whose every attribute is another inert object: usable as a base class,
    a decorator, a call, a type annotation."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        sub = _Inert(f"{self.__name__}.{name}")
        setattr(self, name, sub)
        return sub

    def __call__(self, *args, **kwargs):
        return self

    def __mro_entries__(self, bases):
        return ()

    def __iter__(self):
        return iter(())

    def __getitem__(self, key):
        return self

    def __or__(self, other):
        return self


class _NativeStandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in NATIVE:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Inert(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def _ours(name: str) -> bool:
    return name.split(".")[0] in NATIVE + ("habitat",)


@contextlib.contextmanager
def habitat_lab():
    """Yields habitat-lab's ``habitat.datasets.object_nav.object_nav_dataset`` module."""
    assert not any(_ours(m) for m in sys.modules), "habitat modules already imported"
    finder = _NativeStandIns()
    sys.meta_path.insert(0, finder)
    try:
        import habitat.datasets.object_nav.object_nav_dataset as objectnav

        yield objectnav
    finally:
        sys.meta_path.remove(finder)
        for name in [m for m in sys.modules if _ours(m)]:
            del sys.modules[name]


def personal_task_classes(objectnav):
    """(episode, goal, view location) attrs classes: habitat-lab's plus the PersONAL fields."""
    import attr

    task = sys.modules["habitat.tasks.nav.object_nav_task"]

    def fields(names):  # every PersONAL field is optional (default None), as in the authors' classes
        return {n: attr.ib(default=None) for n in names}

    episode = attr.make_class("PersonalEpisode", fields(PERSONAL_EPISODE_FIELDS), bases=(task.ObjectGoalNavEpisode,),
                              auto_attribs=False, kw_only=True)
    goal = attr.make_class("PersonalGoal", fields(PERSONAL_GOAL_FIELDS), bases=(task.ObjectGoal,),
                           auto_attribs=False, kw_only=True)
    view = attr.make_class("PersonalViewLocation", {"agent_state": attr.ib(), "iou": attr.ib(default=None)})
    return episode, goal, view


@contextlib.contextmanager
def with_personal_fields(objectnav):
    """habitat-lab's ObjectNavDatasetV1 deserialising into the PersONAL classes."""
    episode, goal, view = personal_task_classes(objectnav)
    saved = (objectnav.ObjectGoalNavEpisode, objectnav.ObjectGoal, objectnav.ObjectViewLocation)
    objectnav.ObjectGoalNavEpisode, objectnav.ObjectGoal, objectnav.ObjectViewLocation = episode, goal, view
    try:
        yield objectnav.ObjectNavDatasetV1
    finally:
        objectnav.ObjectGoalNavEpisode, objectnav.ObjectGoal, objectnav.ObjectViewLocation = saved


def authors_filter(episode) -> list:
    """The goals PersonalizedObjectNavDatasetV1 keeps for an episode: same floor, named target.
    (``in`` on strings is a substring test there, so ``vase_1`` passes for ``vase_12``.)"""
    return [g for g in episode.goals if g.floor_id in episode.floor_id and g.object_name in episode.object_id]


def dataset_config(root, split: str):
    """The config habitat-lab's config-driven loading reads (habitat.dataset.* fields)."""
    from omegaconf import OmegaConf

    return OmegaConf.create({
        "type": "ObjectNav-v1", "split": split, "content_scenes": ["*"],
        "data_path": f"{root}/{{split}}/{{split}}.json.gz", "scenes_dir": str(root),
    })
