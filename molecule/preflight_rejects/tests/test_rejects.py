"""After a rejected plan (converge.yml), nothing of the serving layers is on the host."""

from __future__ import annotations

testinfra_hosts = ["ansible://rejects-v100"]


def test_no_gateway_installed(host):
    assert not host.package("nginx").is_installed
    assert not host.file("/etc/nginx").exists


def test_no_engine_units(host):
    out = host.check_output("ls /etc/systemd/system")
    assert "volta-" not in out
    assert host.run("systemctl list-units --all --no-legend 'volta-*'").stdout.strip() == ""


def test_no_service_account_and_no_secrets(host):
    assert not host.user("volta").exists
    assert not host.file("/etc/volta").exists
    assert not host.file("/var/lib/volta").exists
    assert not host.file("/usr/local/libexec/volta").exists


def test_no_model_downloaded(host):
    # The hub model of instance hub-long was read from the hub (metadata only), never downloaded.
    assert not host.file("/srv/volta/models").exists
