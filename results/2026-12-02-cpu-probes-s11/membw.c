#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <pthread.h>
#include <immintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
size_t N; float *a; int R;
typedef struct {size_t lo,hi; double t; float s;} job;
void* rd(void*p){job*j=p; __m256 s0=_mm256_setzero_ps(),s1=s0,s2=s0,s3=s0; 
 for(size_t i=j->lo;i<j->hi;i+=8) s0=_mm256_add_ps(s0,_mm256_loadu_ps(a+i));
 double t0=now();
 for(int r=0;r<R;r++) for(size_t i=j->lo;i<j->hi;i+=32){ s0=_mm256_add_ps(s0,_mm256_load_ps(a+i)); s1=_mm256_add_ps(s1,_mm256_load_ps(a+i+8)); s2=_mm256_add_ps(s2,_mm256_load_ps(a+i+16)); s3=_mm256_add_ps(s3,_mm256_load_ps(a+i+24));}
 j->t=now()-t0; float t[8];_mm256_storeu_ps(t,_mm256_add_ps(_mm256_add_ps(s0,s1),_mm256_add_ps(s2,s3))); j->s=t[0]; return 0;}
int main(int c,char**v){ N=(size_t)atol(v[1])/4; int T=atoi(v[2]); R=atoi(v[3]); a=aligned_alloc(64,N*4); for(size_t i=0;i<N;i++)a[i]=i; 
 pthread_t th[8]; job j[8]; for(int k=0;k<T;k++){j[k].lo=N/T*k;j[k].hi=N/T*(k+1);pthread_create(&th[k],0,rd,&j[k]);} for(int k=0;k<T;k++)pthread_join(th[k],0); double t=0; for(int k=0;k<T;k++) if(j[k].t>t)t=j[k].t; printf("%d thr %7.2f MB: %.1f GB/s\n",T,N*4/1e6,(double)N*4*R/t/1e9);}
