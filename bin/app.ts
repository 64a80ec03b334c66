#!/usr/bin/env node
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { OtpStack } from '../lib/otp-stack';

const app = new App();

// Environment-agnostic on purpose (no account/region, no lookups): `cdk synth` works with no credentials and
// no network, and the same template deploys to whatever account and region the CLI is pointed at.
new OtpStack(app, app.node.tryGetContext('otp:stackName') ?? 'OtpVerify', {
  description: 'Self-hosted phone verification (OTP) service',
});

// cdk-nag's AwsSolutions rules run on every synth; an unacknowledged error fails it.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
