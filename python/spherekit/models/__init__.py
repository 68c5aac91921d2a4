"""Backbone encoders (sentence-transformers), resolved offline first: see spherekit.models.backbones."""

from __future__ import annotations

from .backbones import KNOWN, BackboneNotFoundError, load_backbone, resolve_backbone

__all__ = ["KNOWN", "BackboneNotFoundError", "load_backbone", "resolve_backbone"]
