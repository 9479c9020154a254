#include <stdio.h>
#include <stdint.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){ volatile uint32_t seed=12345; uint32_t v=seed, l=1000003, acc=0; double t0=now();
 for(long i=0;i<400000000L;i++){ uint32_t q=v/((l>>3)|512); acc+=q; v = v*1664525u+1013904223u ^ q; l = l*22695477u+1; }
 double t=now()-t0; printf("spin %.3f s (%.2f ns/iter) %u\n",t,t/4e8*1e9,acc); }
