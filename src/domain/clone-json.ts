/**
 * A deep copy of JSON data (plain objects, arrays, strings, numbers, booleans, null; `undefined`
 * properties are kept). Documents, events and payloads are JSON by schema, and for them this is
 * several times faster than `structuredClone`, whose serializer has a fixed cost per call and per
 * object (60 → 9 µs for a 10 KB agent document). Not for Dates, Maps or cyclic data.
 */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const copy: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = cloneJson(value[i] as unknown);
    return copy as T;
  }
  const copy: Record<string, unknown> = {};
  for (const key in value) copy[key] = cloneJson((value as Record<string, unknown>)[key]);
  return copy as T;
}
