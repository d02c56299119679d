import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";

/** Mount points in /proc/self/mountinfo text (field 5, with its octal escapes such as \040 undone). */
export function parseMountPoints(mountinfo: string): string[] {
  const points: string[] = [];
  for (const line of mountinfo.split("\n")) {
    const field = line.split(" ")[4];
    if (field)
      points.push(
        field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))),
      );
  }
  return points;
}

function umount(args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn("umount", args, { stdio: "ignore" });
    child.on("error", () => resolve(127));
    child.on("close", (code) => resolve(code ?? 1));
  });
}

/**
 * Unmounts everything mounted below `dir`, deepest first (a cluster's volumes loop-mounted in its
 * folder: stopping the cluster leaves nothing mounted, and deleting its folder never walks into a
 * live filesystem). A mount still busy is detached lazily. Returns the mount points it unmounted.
 */
export async function unmountBelow(dir: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile("/proc/self/mountinfo", "utf8");
  } catch {
    return [];
  }
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  const below = parseMountPoints(text)
    .filter((p) => p.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
  const done: string[] = [];
  for (const point of new Set(below)) {
    if ((await umount([point])) === 0 || (await umount(["-l", point])) === 0) done.push(point);
  }
  return done;
}
