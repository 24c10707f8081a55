/* What one process_vm_readv costs against one memcpy, in this process
 * (the kernel pins the source pages, then copies): the floor of single
 * copy between ranks of one host (docs/benchmarks.md "One host"). Best of 5 runs
 * of 300 copies per size; with an argument, buffers on transparent huge
 * pages (madvise), as a user buffer rarely is.
 * Build: cc -O2 -o readv benches/c/process_vm_readv.c */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(int argc,char**argv){
  int huge=argc>1;
  size_t N=4<<20;
  char*a,*b; posix_memalign((void**)&a,2<<20,N); posix_memalign((void**)&b,2<<20,N);
  if(huge){madvise(a,N,MADV_HUGEPAGE);madvise(b,N,MADV_HUGEPAGE);}
  memset(a,1,N); memset(b,2,N);
  pid_t p=getpid();
  size_t sizes[]={16384,65536,262144,1048576,4194304};
  for(int k=0;k<5;k++){size_t n=sizes[k]; int it=300; double best=1e9,bm=1e9;
    for(int rep=0;rep<5;rep++){
    double t0=now(); for(int i=0;i<it;i++){struct iovec l={b,n},r={a,n}; if(process_vm_readv(p,&l,1,&r,1,0)!=(ssize_t)n){perror("r");return 1;}} double t1=now();
    for(int i=0;i<it;i++){memcpy(b,a,n); __asm__ volatile(""::"r"(b):"memory");} double t2=now();
    if((t1-t0)/it<best)best=(t1-t0)/it; if((t2-t1)/it<bm)bm=(t2-t1)/it;}
    printf("%s %zu: readv %.2f us (%.1f GB/s) memcpy %.2f us\n",huge?"huge":"4k",n,best,n/best/1e3,bm);}
}
