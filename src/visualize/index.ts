export { machineGuards, machineStates, machineTransitions, stateNodes, type MachineTransition } from './graph-walk.js';
export { machineSummary, type MachineSummary } from './summary.js';
export { toMermaid } from './mermaid.js';
export { toSmcatJson, toScxml, toSvg } from './smcat.js';
export { toStatelySource } from './stately.js';
export { machineDefinition, toDefinitionJson } from './json.js';
export { CoverageReport, MachineCoverage, readCoverage } from './coverage.js';
export { generate, renderVisualizations } from './generate.js';
