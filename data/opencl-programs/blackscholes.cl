/* Black-Scholes prices of n European call and put options (spot S, strike X, years T) at
 * a fixed risk-free rate and volatility; the normal CDF by the Abramowitz-Stegun
 * polynomial (26.2.17), written out for d1 and d2. */
#define RATE 0.02f
#define VOLATILITY 0.30f
#define RSQRT2PI 0.39894228040143267794f
#define A1 0.31938153f
#define A2 -0.356563782f
#define A3 1.781477937f
#define A4 -1.821255978f
#define A5 1.330274429f

__kernel void black_scholes(__global const float *S, __global const float *X,
                            __global const float *T, __global float *call, __global float *put,
                            int n)
{
    size_t i = get_global_id(0);
    if (i < (size_t)n) {
        float s = S[i];
        float x = X[i];
        float t = T[i];
        float sqrt_t = sqrt(t);
        float d1 = (log(s / x) + (RATE + 0.5f * VOLATILITY * VOLATILITY) * t)
                   / (VOLATILITY * sqrt_t);
        float d2 = d1 - VOLATILITY * sqrt_t;

        float k1 = 1.0f / (1.0f + 0.2316419f * fabs(d1));
        float cnd1 = RSQRT2PI * exp(-0.5f * d1 * d1)
                     * (k1 * (A1 + k1 * (A2 + k1 * (A3 + k1 * (A4 + k1 * A5)))));
        if (d1 > 0.0f)
            cnd1 = 1.0f - cnd1;
        float k2 = 1.0f / (1.0f + 0.2316419f * fabs(d2));
        float cnd2 = RSQRT2PI * exp(-0.5f * d2 * d2)
                     * (k2 * (A1 + k2 * (A2 + k2 * (A3 + k2 * (A4 + k2 * A5)))));
        if (d2 > 0.0f)
            cnd2 = 1.0f - cnd2;

        float discount = exp(-RATE * t);
        call[i] = s * cnd1 - x * discount * cnd2;
        put[i] = x * discount * (1.0f - cnd2) - s * (1.0f - cnd1);
    }
}
