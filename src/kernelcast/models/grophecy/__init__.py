"""GROPHECY (Meng et al., GPU performance projection from CPU code skeletons).

Modules: ``sections`` (bounded regular sections: ranges, tiles, accesses, patterns and
footprints, §6.3) and ``usage`` (the data-usage equations (1)–(6) of §6.4–6.6). The model
class that puts them behind kernelcast's model interface comes later.
"""
