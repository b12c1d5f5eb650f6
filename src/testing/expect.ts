import assert from "node:assert/strict";

// The few matchers the contract suite uses, on node:assert: no test runner is loaded with it.

/** A copy without the properties that are `undefined`, as vitest's `toEqual` compares. */
function defined(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(defined);
  if (value === null || typeof value !== "object") return value;
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (item !== undefined) copy[key] = defined(item);
  }
  return copy;
}

function matchObject(actual: unknown, expected: Record<string, unknown>): void {
  assert.ok(
    actual !== null && (typeof actual === "object" || typeof actual === "function"),
    `expected an object, got ${String(actual)}`,
  );
  const record = actual as Record<string, unknown>;
  for (const [key, value] of Object.entries(expected)) {
    assert.deepEqual(defined(record[key]), defined(value), `property ${key}`);
  }
}

/** `expect(actual).toBe(…)` and the others the suite uses, failing with an AssertionError. */
export function expect(actual: unknown) {
  const number = () => {
    assert.equal(typeof actual, "number", `expected a number, got ${String(actual)}`);
    return actual as number;
  };
  return {
    toBe(expected: unknown): void {
      assert.equal(actual, expected);
    },
    toEqual(expected: unknown): void {
      assert.deepEqual(defined(actual), defined(expected));
    },
    toMatchObject(expected: Record<string, unknown>): void {
      matchObject(actual, expected);
    },
    toContain(item: unknown): void {
      assert.ok(
        Array.isArray(actual) && actual.includes(item),
        `expected ${JSON.stringify(actual)} to contain ${JSON.stringify(item)}`,
      );
    },
    toHaveLength(length: number): void {
      assert.equal((actual as { length?: unknown } | null)?.length, length);
    },
    toBeGreaterThan(n: number): void {
      assert.ok(number() > n, `expected ${String(actual)} > ${n}`);
    },
    toBeGreaterThanOrEqual(n: number): void {
      assert.ok(number() >= n, `expected ${String(actual)} >= ${n}`);
    },
    toBeLessThanOrEqual(n: number): void {
      assert.ok(number() <= n, `expected ${String(actual)} <= ${n}`);
    },
    rejects: {
      async toMatchObject(expected: Record<string, unknown>): Promise<void> {
        await assert.rejects(actual as Promise<unknown>, (error: unknown) => {
          matchObject(error, expected);
          return true;
        });
      },
    },
  };
}
