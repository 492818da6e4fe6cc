import type { AnyStateMachine } from 'xstate';
import { toJsonValue, type JsonValue } from './names.js';

/**
 * XState's own definition (`machine.toJSON()`), pretty-printed with object keys sorted at every
 * level so the file only changes when the machine does. Arrays keep their order: transition
 * branches are tried in order. Inline functions have no JSON form and come out as `null` or absent.
 */
function sortKeys(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const sorted: { [key: string]: JsonValue } = {};
  for (const key of Object.keys(value).sort()) {
    const item = value[key];
    if (item !== undefined) sorted[key] = sortKeys(item);
  }
  return sorted;
}

export function machineDefinition(machine: AnyStateMachine): JsonValue {
  // A JSON round trip first, so the `toJSON` hooks of nested transition definitions apply.
  const plain: unknown = JSON.parse(JSON.stringify(machine.toJSON()));
  return sortKeys(toJsonValue(plain) ?? null);
}

export function toDefinitionJson(machine: AnyStateMachine): string {
  return `${JSON.stringify(machineDefinition(machine), null, 2)}\n`;
}
