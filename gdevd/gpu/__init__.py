"""Emulated GPU hardware: device memory, MMU page tables, copy engines, compute engine.

Mechanism only; every policy (allocation, scheduling, sharing) lives in the runtime.
"""
