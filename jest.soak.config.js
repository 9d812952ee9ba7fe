/** The long seeded randomized runs (cursor and trigger against models of the API): `npm run test:soak`. */
const base = require('./jest.config');

module.exports = {
	...base,
	testMatch: ['**/*.soak.test.ts'],
	testPathIgnorePatterns: ['/node_modules/', '/test/e2e/'],
};
