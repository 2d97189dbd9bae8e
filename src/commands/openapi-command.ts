import { openApiJson } from '../openapi/openapi-json.js';
import type { CliCommand } from './cli-command.js';

/** `openapi`: the document GET /openapi.json serves. */
export const openapiCli: CliCommand = (yargs) =>
  yargs.command(
    'openapi',
    'Print the OpenAPI 3.1 document of the public API (served at GET /openapi.json)',
    (c) => c.example('$0 openapi > docs/openapi.json', 'regenerate the committed document'),
    () => {
      process.stdout.write(openApiJson());
    },
  );
