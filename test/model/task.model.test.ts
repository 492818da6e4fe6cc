import { TaskDriver } from './adapters/task.js';
import { modelSuite } from './adapters/suite.js';
import { taskModel } from './models.js';

modelSuite('task', taskModel, new TaskDriver());
