"""GROPHECY (Meng et al., GPU performance projection from CPU code skeletons).

Modules: ``sections`` (bounded regular sections: ranges, tiles, accesses, patterns and
footprints, §6.3), ``usage`` (the data-usage equations (1)–(6) of §6.4–6.6), ``skeletons``
(a parsed code skeleton's accesses in that algebra), ``coalescing`` (transactions of a
warp's access by compute capability, §7.2), ``compiler`` (Table 3), ``instructions``
(equations (7) and (9)–(17)), ``layouts`` (the Layout and its blocks and foldings, §6.1,
§6.2), ``characterize`` (a layout's statistics and Hong–Kim workload, §7), ``search``
(the layout search and hints, §6.2) and ``model`` (GrophecyModel, behind kernelcast's
model interface).
"""
