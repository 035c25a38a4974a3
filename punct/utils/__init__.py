"""Small helpers every entry point uses: logging, configs, devices, atomic outputs, job splits."""
