import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { allocateRemapRange, parsePrefix, remapAddress } from "./addresses.js";
import { PeerAddresses } from "./peer-addresses.js";

describe("remapping", () => {
  test("translates the host part 1:1 between prefixes of one size", () => {
    assert.equal(remapAddress("10.200.1.7", "10.200.1.0/24", "10.240.0.0/24"), "10.240.0.7");
    assert.equal(remapAddress("10.200.1.255", "10.200.1.0/24", "10.240.3.0/24"), "10.240.3.255");
    assert.equal(remapAddress("10.16.5.9", "10.16.0.0/16", "10.241.0.0/16"), "10.241.5.9");
    assert.equal(remapAddress("10.200.2.7", "10.200.1.0/24", "10.240.0.0/24"), undefined);
    assert.throws(() => remapAddress("10.200.1.7", "10.200.1.0/24", "10.240.0.0/16"), /differ in size/);
  });

  test("identical podCIDRs of two peers get distinct ranges, none overlapping the cluster's own", () => {
    const own = "10.240.0.0/24";
    const first = allocateRemapRange({ bits: 24, taken: [own] });
    assert.equal(first, "10.240.1.0/24");
    const second = allocateRemapRange({ bits: 24, taken: [own, first] });
    assert.equal(second, "10.240.2.0/24");
    // Both peers use 10.200.1.0/24, as this cluster does: each pod still has its own address here.
    const home = { name: "home", id: "id-home" };
    const addresses = new PeerAddresses();
    addresses.update(home, [
      {
        source: { name: "edge-1", id: "id-1" },
        importer: home,
        podCidr: "10.200.1.0/24",
        remappedCidr: first,
      },
      {
        source: { name: "edge-2", id: "id-2" },
        importer: home,
        podCidr: "10.200.1.0/24",
        remappedCidr: second,
      },
    ]);
    assert.equal(addresses.importedAddress("id-1", "10.200.1.5"), "10.240.1.5");
    assert.equal(addresses.importedAddress("id-2", "10.200.1.5"), "10.240.2.5");
    assert.equal(addresses.importedAddress("id-3", "10.200.1.5"), undefined);
    assert.equal(addresses.importedAddress("id-1", "10.9.9.9"), undefined);
  });

  test("a /16 skips ranges taken inside it; a full pool says so", () => {
    assert.equal(allocateRemapRange({ bits: 16, taken: ["10.240.3.0/24"] }), "10.241.0.0/16");
    assert.throws(
      () => allocateRemapRange({ bits: 24, taken: ["10.0.0.0/8"], pool: "10.0.0.0/8" }),
      /no free \/24/,
    );
  });

  test("bad prefixes are refused naming the field", () => {
    assert.throws(
      () => parsePrefix("10.200.1.1/24", "podCidr"),
      /podCidr: .*host bits set.*10\.200\.1\.0\/24/,
    );
    assert.throws(
      () => parsePrefix("10.300.1.0/24", "podCidr"),
      /podCidr: "10\.300\.1\.0" is not an IPv4 address/,
    );
    assert.throws(() => parsePrefix("10.200.1.0", "podCidr"), /podCidr: .*not an IPv4 prefix/);
  });
});
