import assert from "node:assert/strict";
import { test } from "node:test";
import { formatFindings } from "./doctor.js";

test("a healthy installation is said to be healthy", () => {
  const text = formatFindings([{ check: "crds", status: "ok", detail: "22 established" }]);
  assert.match(text, /^STATUS +CHECK +DETAIL\nok +crds +22 established\n\ntenantry is healthy$/);
});

test("each problem is listed with its fix, and counted", () => {
  const text = formatFindings([
    { check: "crds", status: "error", detail: "CustomResourceDefinition x is missing", fix: "apply it" },
    { check: "certificates", status: "warning", detail: "expires in 2 days", fix: "renew it" },
    { check: "leader", status: "ok", detail: "a leads" },
  ]);
  assert.match(text, /^ERROR +crds +CustomResourceDefinition x is missing$/m);
  assert.match(text, /^WARNING +certificates +expires in 2 days$/m);
  assert.match(
    text,
    /How to fix:\n- crds: CustomResourceDefinition x is missing\n {2}fix: apply it\n- certificates: expires in 2 days\n {2}fix: renew it/,
  );
  assert.match(text, /1 error, 1 warning$/);
});
