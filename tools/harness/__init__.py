"""Test and demo harness: the local AWS emulator, a local authoritative DNS server, playbook runs."""
