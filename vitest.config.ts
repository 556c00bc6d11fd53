import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Test files start real servers and SQLite files; two workers match the machines' two cores.
    maxWorkers: 2,
  },
});
