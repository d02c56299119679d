/**
 * Functions in src/ stay under 120 lines. The ones longer today are listed with their length in
 * long-functions.json, a budget that may only shrink: a listed function may not grow, a new one
 * may not pass the limit, and an entry whose function got short (or went) must be removed.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import ts from "typescript";

const LIMIT = 120;
const root = join(import.meta.dirname, "..", "..");
const budgetFile = join(import.meta.dirname, "long-functions.json");

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith(".test.ts"))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

/** A function's name as a reader finds it: its own, its variable's or property's, or its caller's. */
function nameOf(node: ts.Node): string | undefined {
  const named = node as ts.Node & { name?: ts.Node };
  if (ts.isConstructorDeclaration(node)) return "constructor";
  if (named.name) return named.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText();
  if (ts.isCallExpression(parent)) return `${parent.expression.getText().slice(0, 40)}(…)`;
  return undefined;
}

interface LongFunction {
  /** File and the names of the function and the functions around it, e.g. `src/a.ts build > app.get(…)`. */
  key: string;
  line: number;
  lines: number;
}

function longFunctions(file: string): LongFunction[] {
  const source = ts.createSourceFile(
    file,
    readFileSync(join(root, file), "utf8"),
    ts.ScriptTarget.Latest,
    true,
  );
  const found: LongFunction[] = [];
  const visit = (node: ts.Node, path: string[]) => {
    let inner = path;
    if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body) {
      inner = [...path, nameOf(node) ?? "(function)"];
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      if (end - start + 1 > LIMIT)
        found.push({ key: `${file} ${inner.join(" > ")}`, line: start + 1, lines: end - start + 1 });
    } else if (ts.isClassDeclaration(node) && node.name) {
      inner = [...path, node.name.getText()];
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(source, []);
  return found;
}

describe("function length", () => {
  it(`functions in src/ stay under ${LIMIT} lines, and the longer ones listed do not grow`, () => {
    const budget = JSON.parse(readFileSync(budgetFile, "utf8")) as Record<string, number>;
    const found = sourceFiles("src").flatMap(longFunctions);
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const f of found) {
      seen.add(f.key);
      const allowed = budget[f.key];
      if (allowed === undefined)
        problems.push(`${f.key} (line ${f.line}) has ${f.lines} lines, over ${LIMIT}: split it`);
      else if (f.lines > allowed)
        problems.push(`${f.key} (line ${f.line}) grew to ${f.lines} lines from ${allowed}: split it`);
    }
    for (const key of Object.keys(budget))
      if (!seen.has(key))
        problems.push(
          `${key} is no longer over ${LIMIT} lines: remove it from test/lint/long-functions.json`,
        );
    assert.deepEqual(problems, [], `functions over ${LIMIT} lines (${found.length} listed)`);
  });
});
