import { Runtime } from './runtime.js';

const runtime = await Runtime.open({ dataDir: './data' }); // lowdb store, write lease taken

// Created → Initializing → Active: identity, default capability URL, first snapshot.
const { agent, external_trigger } = await runtime.createAgent({ agent_id: 'builder', mission: 'keep CI green' });
console.log(agent.phase, agent.agent.status); // active awake_idle
console.log(external_trigger.token); // shown once; only its SHA-256 is stored

// The scripted runner reads directives: run a command and wait for its result.
runtime.subscribe('builder', (event) => console.log(event.event_seq, event.type));
await runtime.prompt('builder', { text: '/exec-wait echo hello' });

// The task result re-enters the agent as a `task_result` continuation (`resume_expected_wait`).
const summary = await runtime.getSummary('builder');
console.log(summary.scheduling_posture, summary.agent.last_continuation);

// Wake hints are liveness only: many duplicates while one is pending coalesce into one activation.
console.log(await runtime.wake('builder', { reason: 'new commit pushed' })); // { disposition: 'triggered' }

await runtime.control('builder', { action: 'stop' }); // aborts the run, interrupts tasks, revokes triggers
await runtime.close(); // settles every lane, stops processes, releases the lease
