"""The FUSE front: the tree (:mod:`.tree`) and the thin Operations class (:mod:`.ops`)."""
