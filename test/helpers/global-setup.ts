/** Names this test run (test databases carry it) and drops the run's PostgreSQL databases at the end. */
import { dropRunDatabases } from './database.js';

export default function setup() {
  const run = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  process.env.GW_TEST_RUN = run;
  return () => dropRunDatabases(run);
}
