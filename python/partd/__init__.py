"""partd's Python package: the client of the daemon, the exporter that turns a
PyTorch model into a request, and what applies a plan to a live model.

- ``partd.client``: the HTTP client (standard library only);
  ``python -m partd.client`` is its command line (``partd-client`` when
  installed).
- ``partd.exporter``: a model traced with torch.fx into a request;
  ``python -m partd.exporter`` (``partd-export``).
- ``partd.apply``: a plan applied to the model it was made for: ``split``,
  ``checkpoint``, ``tied``, ``sac_policy``.
- ``partd.runtime``: a reference pipeline runtime for torch versions without
  ``torch.distributed.pipelining``: fairscale-format exports through
  ``torch.distributed.pipeline.sync.Pipe`` and ``pytorch``-format action
  lists rank by rank over ``torch.distributed``.

Importing ``partd`` imports nothing else (the client runs without torch).
"""

__version__ = "0.3.0"
