"""Tests of scripts/: the register, uninstall and restore scripts and their helper, without client programs."""
