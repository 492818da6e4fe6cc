import { MemoryStore } from '../../src/store/index.js';
import { storeContract } from './contract.js';

storeContract('memory', async () => new MemoryStore());
