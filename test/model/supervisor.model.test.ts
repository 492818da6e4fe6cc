import { SupervisorDriver } from './adapters/supervisor.js';
import { modelSuite } from './adapters/suite.js';
import { supervisorModel } from './models.js';

modelSuite('supervisor', supervisorModel, new SupervisorDriver(), {
  // An agent actor that throws sends the runtime into a recovery loop that never yields to the
  // event loop (see the report in coverage.md): such a path runs in a child process it can kill.
  isolate: (path) => path.steps.some((step) => step.event.type === 'AGENT.FAILED'),
});
