import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { BackgroundTasks } from "./slots.js";

describe("background tasks", () => {
  test("run beside the caller, at most `concurrency` at once, and drain waits for all", async () => {
    const tasks = new BackgroundTasks(2, 100);
    let running = 0;
    let most = 0;
    let done = 0;
    for (let i = 0; i < 10; i++) {
      assert.equal(
        tasks.run(async () => {
          running++;
          most = Math.max(most, running);
          await sleep(5);
          running--;
          done++;
        }),
        true,
      );
    }
    assert.equal(done, 0, "the caller did not wait");
    await tasks.drain();
    assert.equal(done, 10);
    assert.equal(most, 2);
    assert.equal(tasks.size, 0);
  });

  test("beyond capacity a task is refused, and room comes back as tasks end", async () => {
    const tasks = new BackgroundTasks(1, 3);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ran: number[] = [];
    for (let i = 0; i < 3; i++)
      assert.equal(
        tasks.run(async () => {
          await gate;
          ran.push(i);
        }),
        true,
      );
    assert.equal(
      tasks.run(async () => {
        ran.push(99);
      }),
      false,
    );
    release();
    await tasks.drain();
    assert.deepEqual(ran, [0, 1, 2]);
    assert.equal(
      tasks.run(async () => {
        ran.push(3);
      }),
      true,
    );
    await tasks.drain();
    assert.deepEqual(ran, [0, 1, 2, 3]);
  });

  test("a task that throws frees its slot for the next", async () => {
    const tasks = new BackgroundTasks(1, 10);
    tasks.run(async () => {
      throw new Error("API server down");
    });
    let ran = false;
    tasks.run(async () => {
      ran = true;
    });
    await tasks.drain();
    assert.equal(ran, true);
  });
});
