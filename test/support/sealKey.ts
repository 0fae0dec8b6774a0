/** The raw AES key (32 bytes) tests seal intents with; never used outside tests. */
export const TEST_SEAL_KEY = 'sendproof-test-seal-key-32-bytes';
