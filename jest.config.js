/** Unit and integration tests: nodes run in real n8n execution contexts against the emulator. */
module.exports = {
	testEnvironment: 'node',
	roots: ['<rootDir>/test'],
	testMatch: ['**/*.test.ts'],
	// The long seeded runs are *.soak.test.ts: `npm run test:soak` and `npm run test:money`
	// (jest.soak.config.js).
	testPathIgnorePatterns: ['/node_modules/', '/test/e2e/', '\\.soak\\.test\\.ts$'],
	transform: {
		'^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json', isolatedModules: true }],
	},
	testTimeout: 30000,
	// Jest's default is one worker on two cores; the files wait on the emulator as much as they compute.
	maxWorkers: '100%',
	reporters: ['default', '<rootDir>/test/summary-reporter.js'],
};
