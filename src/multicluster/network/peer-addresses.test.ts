import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { PeerAddresses } from "./peer-addresses.js";

const home = { name: "home", id: "id-home" };
const edge1 = { name: "edge-1", id: "id-1" };
// home sees edge-1's pods in 10.240.1.0/24; edge-1 sees home's in 10.240.5.0/24.
const links = [
  { source: edge1, importer: home, podCidr: "10.200.2.0/24", remappedCidr: "10.240.1.0/24" },
  { source: home, importer: edge1, podCidr: "10.200.1.0/24", remappedCidr: "10.240.5.0/24" },
];

describe("addresses across a peering's gateways", () => {
  test("each direction is translated into the range the importing cluster chose, by name or id", () => {
    const addresses = new PeerAddresses();
    addresses.update(home, links);
    assert.equal(addresses.dialAddress("10.200.2.7", { from: "edge-1", to: "home" }), "10.240.1.7");
    assert.equal(addresses.dialAddress("10.200.1.9", { from: "home", to: "edge-1" }), "10.240.5.9");
    assert.equal(addresses.dialAddress("10.200.1.9", { from: "id-home", to: "id-1" }), "10.240.5.9");
    assert.equal(addresses.importedAddress("id-1", "10.200.2.7"), "10.240.1.7");
  });

  test("an address not of the source's pods is not reachable; clusters no gateway joins keep theirs", () => {
    const addresses = new PeerAddresses();
    addresses.update(home, links);
    // Dialled unchanged in edge-1 it would reach one of edge-1's own pods.
    assert.equal(addresses.dialAddress("10.244.7.10", { from: "home", to: "edge-1" }), undefined);
    assert.equal(addresses.dialAddress("10.200.3.4", { from: "edge-1", to: "edge-2" }), "10.200.3.4");
    assert.equal(addresses.dialAddress("10.200.1.4", { from: "home", to: "home" }), "10.200.1.4");
    assert.equal(addresses.importedAddress("id-2", "10.200.3.4"), undefined);
  });

  test("listeners hear of a change, not of the same links again, nor after unsubscribing", () => {
    const addresses = new PeerAddresses();
    let heard = 0;
    const unsubscribe = addresses.onChange(() => heard++);
    addresses.update(home, links);
    addresses.update(home, [...links].reverse());
    assert.equal(heard, 1);
    addresses.update(home, []);
    assert.equal(heard, 2);
    assert.equal(addresses.dialAddress("10.200.1.9", { from: "home", to: "edge-1" }), "10.200.1.9");
    unsubscribe();
    addresses.update(home, links);
    assert.equal(heard, 2);
  });
});
