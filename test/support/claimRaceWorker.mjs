// Worker-thread bootstrap: load TypeScript through tsx, then run the race worker.
import { register } from 'tsx/esm/api';

register();
await import('./claimRace.ts');
