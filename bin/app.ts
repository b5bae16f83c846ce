#!/usr/bin/env node
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { deploySettingsFrom } from '../lib/deploy-settings';
import { deploymentOf } from '../lib/names';
import { VoiceAgentPlatformStack } from '../lib/stack';

// aws-cdk-lib's built-in CloudFormation template validation adds ~2.3 s to every synth and
// cdk-nag below already checks the stack; CDK_VALIDATION=true turns it back on.
const app = new App({ builtinCloudFormationValidation: process.env.CDK_VALIDATION === 'true' });

// One stack per stage (`-c stage=prod` or STAGE; default dev). Account and region come from the
// CLI's profile at deploy time unless pinned (`-c account=… -c region=…`), so the template is
// the same for every account and region.
const deployment = deploymentOf((key) => app.node.tryGetContext(key), process.env);

// Every deploy setting comes from the CLI's environment (docs/operations.md, "Deploy": one row
// each); a bad value fails here, naming the variable.
new VoiceAgentPlatformStack(app, deployment.stackName, {
  description: `Voice AI Agent Platform API (stage ${deployment.stage})`,
  env: deployment.env,
  ...deploySettingsFrom(process.env),
});

// cdk-nag 3: a policy validation plugin; any unacknowledged finding fails the synth. Each
// acknowledgment sits next to the resource it concerns, with its reason.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
