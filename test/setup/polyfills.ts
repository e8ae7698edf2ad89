import { installPromiseWithResolvers } from '../../src/polyfills.js';

installPromiseWithResolvers();
