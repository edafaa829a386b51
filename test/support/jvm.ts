/**
 * The JVM of the tests' DynamoDB Local compiles with C1 only. On two cores shared with the test
 * workers, C2's compiler threads cost more than its faster code gave back, even over a whole
 * run: the 8-receiver session drain took 55 s instead of 72 s, four integration files 23 s
 * instead of 28-35 s, and the emulator starts in half the time.
 */
export const testJvmOptions = ['-XX:TieredStopAtLevel=1'];
