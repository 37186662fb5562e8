"""The address policy: every class of address the reader refuses, the operator's opt-ins, resolve-then-check."""

from __future__ import annotations

import ipaddress

import pytest

from brave_search_mcp.config import ConfigError, Settings
from brave_search_mcp.models.errors import FetchBlocked, NetworkError
from brave_search_mcp.reader.addresses import AddressPolicy, judge, refusal, resolve_checked
from testkit.sites.dns import ScriptedDNS

REFUSED = {
    "127.0.0.1": "loopback",
    "127.255.0.9": "loopback",
    "::1": "loopback",
    "10.1.2.3": "private",
    "172.16.0.1": "private",
    "192.168.1.1": "private",
    "fd12:3456::1": "private",
    "169.254.169.254": "metadata",
    "169.254.170.2": "metadata",
    "fd00:ec2::254": "metadata",
    "100.100.100.200": "metadata",
    "192.0.0.192": "metadata",
    "169.254.1.1": "link-local",
    "fe80::1": "link-local",
    "224.0.0.1": "multicast",
    "239.1.2.3": "multicast",
    "ff02::1": "multicast",
    "0.0.0.0": "unspecified",
    "::": "unspecified",
    "240.0.0.1": "reserved",
    "255.255.255.255": "reserved",
    "100.64.0.1": "shared",
    "192.0.2.10": "private",  # documentation range
    "fec0::1": "site-local",
    # IPv4 inside IPv6: every form a stack may translate back to the IPv4 address
    "::ffff:127.0.0.1": "loopback",
    "::ffff:10.0.0.1": "private",
    "::ffff:169.254.169.254": "metadata",
    "::ffff:0.0.0.0": "unspecified",
    "::ffff:100.100.100.200": "metadata",
    "::127.0.0.1": "loopback",
    "64:ff9b::a9fe:a9fe": "metadata",
    "2002:7f00:1::": "loopback",
    "2002:a9fe:a9fe::": "metadata",
}


@pytest.mark.parametrize(("address", "kind"), sorted(REFUSED.items()))
def test_every_special_address_is_refused_and_named(address: str, kind: str) -> None:
    why = refusal(ipaddress.ip_address(address))
    assert why is not None and kind in why, why


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


def test_operator_opt_ins_by_cidr_name_and_suffix() -> None:
    policy = AddressPolicy.from_entries(["127.0.0.0/8", "Intranet.Corp", "*.lab.example", "[::1]"])
    loopback = ipaddress.ip_address("127.0.0.5")
    private = ipaddress.ip_address("10.0.0.9")
    assert judge("anything", loopback, policy) is None
    assert judge("anything", ipaddress.ip_address("::ffff:127.0.0.5"), policy) is None  # mapped counts as IPv4
    assert judge("anything", ipaddress.ip_address("::1"), policy) is None
    assert judge("intranet.corp", private, policy) is None
    assert judge("build.lab.example", private, policy) is None
    assert judge("lab.example.evil", private, policy) == "private address"
    assert judge("other.corp", private, policy) == "private address"


def test_an_opted_in_name_still_cannot_reach_cloud_metadata() -> None:
    policy = AddressPolicy.from_entries(["intranet.corp"])
    assert judge("intranet.corp", ipaddress.ip_address("169.254.169.254"), policy) == "cloud metadata address"
    explicit = AddressPolicy.from_entries(["169.254.169.254/32"])
    assert judge("x", ipaddress.ip_address("169.254.169.254"), explicit) is None


@pytest.mark.anyio
async def test_one_private_answer_refuses_the_whole_name() -> None:
    dns = ScriptedDNS({"mixed.example": ["93.184.216.34", "10.0.0.7"]})
    with pytest.raises(FetchBlocked) as caught:
        await resolve_checked("mixed.example", 443, AddressPolicy(), dns)
    assert "resolves to a private address" in caught.value.message
    assert "10.0.0.7" not in caught.value.message  # internal DNS is not echoed to the model
    assert caught.value.details["reason"] == "address"


@pytest.mark.anyio
async def test_public_answers_are_returned_in_order_without_duplicates() -> None:
    dns = ScriptedDNS({"ok.example": ["93.184.216.34", "2606:2800:220:1::1", "93.184.216.34"]})
    assert await resolve_checked("ok.example", 80, AddressPolicy(), dns) == ("93.184.216.34", "2606:2800:220:1::1")


@pytest.mark.anyio
async def test_a_name_that_does_not_exist_is_a_network_error_not_retryable() -> None:
    with pytest.raises(NetworkError) as caught:
        await resolve_checked("nowhere.invalid", 80, AddressPolicy(), ScriptedDNS({}))
    assert caught.value.retryable is False
    assert "nowhere.invalid" in caught.value.message


def test_allowed_hosts_setting_is_parsed_and_checked() -> None:
    settings = Settings.from_env({"BRAVE_SEARCH_READ_ALLOWED_HOSTS": "127.0.0.1, 10.0.0.0/8 Wiki.Corp *.lan ::1"})
    assert settings.read_allowed_hosts == ("127.0.0.1", "10.0.0.0/8", "wiki.corp", "*.lan", "::1")
    with pytest.raises(ConfigError, match="BRAVE_SEARCH_READ_ALLOWED_HOSTS"):
        Settings.from_env({"BRAVE_SEARCH_READ_ALLOWED_HOSTS": "http://wiki.corp/"})
    with pytest.raises(ConfigError, match="BRAVE_SEARCH_READ_MAX_BYTES"):
        Settings.from_env({"BRAVE_SEARCH_READ_MAX_BYTES": "10"})
