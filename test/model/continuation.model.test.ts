import { ContinuationDriver } from './adapters/continuation.js';
import { modelSuite } from './adapters/suite.js';
import { continuationModel } from './models.js';

modelSuite('continuation', continuationModel, new ContinuationDriver());
