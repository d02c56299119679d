/**
 * The import graph of src/ keeps the architecture's shape: no import cycles (a cycle makes
 * module start order matter and hides which piece depends on which), a capability reaches
 * another only through its door, the other folder's index.ts, and shipped code never imports
 * the test harness (benchmarks share theirs with the tests through testing/).
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, it } from "node:test";
import ts from "typescript";

const root = join(import.meta.dirname, "..", "..");
const src = join(root, "src");

function sourceFiles(dir = src): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith(".test.ts"))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

/** The repository files a file imports (type-only imports included: they tie the modules just as well). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), "utf8");
  const found: string[] = [];
  for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
    if (!fileName.startsWith(".")) continue;
    const target = resolve(root, dirname(file), fileName);
    const candidates = [
      target.replace(/\.js$/, ".ts"),
      target.replace(/\.js$/, ".tsx"),
      join(target, "index.ts"),
    ];
    const hit = candidates.find((c) => existsSync(c));
    if (hit) found.push(relative(root, hit));
  }
  return found;
}

const graph = new Map(sourceFiles().map((f) => [f, importsOf(f)]));

/** Strongly connected components of more than one file, or a file importing itself (Tarjan). */
function cycles(edges: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || edges.get(node)?.includes(node)) found.push(component.sort());
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** The capability (top folder under src/) a file belongs to. */
const capabilityOf = (file: string) => file.split("/")[1];

describe("imports in src/", () => {
  it("the cycle finder finds a cycle and passes a tree", () => {
    const cyclic = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
    ]);
    assert.deepEqual(cycles(cyclic), [["a", "b", "c"]]);
    assert.deepEqual(
      cycles(
        new Map([
          ["a", ["b"]],
          ["b", []],
        ]),
      ),
      [],
    );
  });

  it("form no cycle", () => {
    const found = cycles(graph);
    assert.deepEqual(found, [], `import cycles:\n${found.map((c) => `  ${c.join(" ↔ ")}`).join("\n")}`);
  });

  it("never reach the test harness, and benchmarks take theirs from testing/", () => {
    const wrong: string[] = [];
    for (const [file, targets] of graph)
      for (const t of targets) if (/^(test|testing)\//.test(t)) wrong.push(`${file} → ${t}`);
    for (const file of sourceFiles(join(root, "bench")))
      for (const t of importsOf(file)) if (t.startsWith("test/")) wrong.push(`${file} → ${t}`);
    assert.deepEqual(wrong, []);
  });

  it("reach another capability only through its index.ts", () => {
    const internal: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        if (capabilityOf(target) === capabilityOf(file)) continue;
        if (target !== `src/${capabilityOf(target)}/index.ts`) internal.push(`${file} → ${target}`);
      }
    }
    assert.deepEqual(internal, [], `imports of another capability's internals:\n  ${internal.join("\n  ")}`);
  });
});
