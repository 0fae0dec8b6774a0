// Worker-thread bootstrap: load TypeScript through tsx, then run one rate-control worker.
import { register } from 'tsx/esm/api';

register();
await import('./rateWorker.ts');
